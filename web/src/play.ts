// "Play": the Lobby on the page. A player registers a name once (the key is kept in this browser's
// localStorage and can be exported, or pasted on another device), picks a game, presses Play, waits on
// the Seated stream and lands on the table; or presses "Play a bot" (a level: random, greedy, search) and
// sits at once at a table of bot players. The key is the seat token at every Lobby table.
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { auth, explain, transport } from "./api";
import { h } from "./dom";
import { Lobby, type Seat } from "./gen/protos/tablehall/v1/lobby_pb";

const STORED = "tablehall:player";

export interface Player {
  playerId: string;
  name: string;
  key: string;
}

export type Seated = (matchId: string, key: string, names: string[]) => void;

const lobby: Client<typeof Lobby> = createClient(Lobby, transport);
let waiting: AbortController | null = null;
/** A friend link's challenge (#challenge=ID), read before the first screen clears the address. */
let linked: string | null = new URLSearchParams(location.hash.slice(1)).get("challenge");

export function storedPlayer(): Player | null {
  try {
    const found = JSON.parse(localStorage.getItem(STORED) ?? "null");
    return found && typeof found.key === "string" ? (found as Player) : null;
  } catch {
    return null;
  }
}

function keep(player: Player | null): void {
  if (player) localStorage.setItem(STORED, JSON.stringify(player));
  else localStorage.removeItem(STORED);
}

/** The "Play" panel of the page's first screen: register (or paste a key), then play. */
export function playPanel(onSeated: Seated, banner: (text: string | null) => void): HTMLElement {
  const panel = h("form", { id: "play", onsubmit: (e: Event) => e.preventDefault() });
  const draw = (): void => {
    const parts = storedPlayer() ? ready(draw, onSeated, banner) : signUp(draw, banner);
    panel.replaceChildren(...parts.filter((part): part is Node => part !== null));
  };
  draw();
  return panel;
}

function signUp(redraw: () => void, banner: (text: string | null) => void): (Node | null)[] {
  const name = h("input", { name: "player-name", placeholder: "1 to 32 letters, digits, - _ .", maxlength: 32 });
  const pasted = h("input", { name: "player-key", placeholder: "thp_…" });
  const register = async (): Promise<void> => {
    try {
      const made = await lobby.registerPlayer({ name: name.value.trim() });
      keep({ playerId: String(made.playerId), name: made.name, key: made.key });
      banner(null);
      redraw();
    } catch (error) {
      banner(explain(error));
    }
  };
  const useKey = async (): Promise<void> => {
    try {
      const me = await lobby.whoAmI({}, auth(pasted.value.trim()));
      keep({ playerId: String(me.playerId), name: me.name, key: pasted.value.trim() });
      banner(null);
      redraw();
    } catch (error) {
      banner(explain(error));
    }
  };
  return [
    h("h2", {}, "Play"),
    linked ? h("p", { id: "invited" }, "A friend invited you to a table: get a name, then take your seat.") : null,
    h("p", {}, "Get a player name once; your key stays in this browser."),
    h("label", {}, "Name ", name),
    h("button", { type: "button", id: "register", onclick: register }, "Register"),
    h("label", {}, "Or your key ", pasted),
    h("button", { type: "button", id: "use-key", onclick: useKey }, "Use this key"),
  ];
}

function ready(redraw: () => void, onSeated: Seated, banner: (text: string | null) => void): Node[] {
  const me = storedPlayer()!;
  const game = h("select", { name: "play-game" }, h("option", { value: "spectacular-bid" }, "Spectacular Bid"), h("option", { value: "501" }, "501♠"));
  const status = h("p", { id: "play-status", role: "status" });
  const exported = h("input", { id: "exported-key", readonly: true, hidden: true, value: me.key });
  const play = h("button", { type: "button", id: "play-button" }, "Play");
  const level = h(
    "select",
    { name: "bot-level", title: "random: any legal move; greedy: the best move now; search: thinks ahead (up to a second a move)" },
    h("option", { value: "random" }, "random"),
    h("option", { value: "greedy" }, "greedy"),
    h("option", { value: "search", selected: true }, "search"),
  );
  const bot = h("button", { type: "button", id: "play-bot" }, "Play a bot");
  const invite = h("button", { type: "button", id: "invite" }, "Invite a friend");
  const take = h("button", { type: "button", id: "take-challenge", hidden: !linked }, "Take the seat you were invited to");
  const link = h("input", { id: "invite-link", readonly: true, hidden: true });
  const cancel = h("button", { type: "button", id: "cancel-play", hidden: true }, "Cancel");
  let opened: string | null = null; // the challenge this page opened and waits on
  const wait = async (what: string, start: () => Promise<string | Seat>): Promise<void> => {
    for (const b of [play, invite, take, bot]) b.disabled = true;
    cancel.hidden = false;
    status.textContent = what;
    try {
      const seat = await seatedAfter(me.key, start);
      status.textContent = "";
      onSeated(seat.matchId, me.key, seat.players);
    } catch (error) {
      status.textContent = "";
      if (ConnectError.from(error).code !== Code.Canceled) banner(explain(error));
    } finally {
      for (const b of [play, invite, take, bot]) b.disabled = false;
      cancel.hidden = true;
      opened = null;
    }
  };
  play.addEventListener("click", () => void wait("Waiting for an opponent…", () => joinQueue(me.key, game.value)));
  bot.addEventListener("click", () =>
    void wait(`Setting up a table with the ${level.value} bot…`, () => lobby.playBot({ game: game.value, level: level.value }, auth(me.key))),
  );
  invite.addEventListener("click", () =>
    void wait("Waiting for your friend…", async () => {
      const made = await lobby.openChallenge({ game: game.value, unlisted: true }, auth(me.key));
      opened = made.challengeId;
      const minutes = Math.round(Number(made.expiresUnixMs - made.openedUnixMs) / 60000);
      status.textContent = `Waiting for your friend… (the link works for ${minutes} min)`;
      link.value = `${location.origin}${location.pathname}#challenge=${made.challengeId}`;
      link.hidden = false;
      link.select();
      return made.challengeId;
    }),
  );
  take.addEventListener("click", () =>
    void wait("Waiting for the table to fill…", async () => {
      const id = linked!;
      linked = null;
      take.hidden = true;
      await lobby.takeChallenge({ challengeId: id }, auth(me.key));
      return id;
    }),
  );
  cancel.addEventListener("click", async () => {
    waiting?.abort();
    if (opened) await lobby.cancelChallenge({ challengeId: opened }, auth(me.key)).catch(() => undefined);
    else await lobby.leave({}, auth(me.key)).catch(() => undefined);
    opened = null;
    link.hidden = true;
  });
  const exportKey = (): void => {
    exported.hidden = false;
    exported.select();
    const link = h("a", { href: URL.createObjectURL(new Blob([me.key + "\n"], { type: "text/plain" })), download: `tablehall-${me.name}.key` });
    link.click();
  };
  const forget = (): void => {
    if (confirm("Forget this player on this browser? Without the exported key it cannot come back.")) {
      keep(null);
      redraw();
    }
  };
  return [
    h("h2", {}, "Play"),
    h("p", {}, "Playing as ", h("strong", { id: "player-name" }, me.name)),
    take,
    h("label", {}, "Game ", game),
    play,
    h("div", { class: "bot-choice" }, h("label", {}, "Bot level ", level), bot),
    invite,
    link,
    cancel,
    status,
    h("div", { class: "key-tools" }, h("button", { type: "button", id: "export-key", onclick: exportKey }, "Export key"), h("button", { type: "button", onclick: forget }, "Forget")),
    exported,
  ];
}

/** Join the queue; its ticket (a stay left by an earlier visit is replaced by a fresh one). */
async function joinQueue(key: string, game: string): Promise<string> {
  try {
    return (await lobby.join({ game }, auth(key))).ticket;
  } catch (error) {
    if (ConnectError.from(error).code !== Code.AlreadyExists) throw error;
    await lobby.leave({}, auth(key));
    return (await lobby.join({ game }, auth(key))).ticket;
  }
}

/** Open the Seated stream, then `start` (a join, a challenge opened or taken: the ticket its seat will
 * carry; or PlayBot's seat, which is the answer when its table is made, else waited for by match id), and
 * wait for that seat. */
async function seatedAfter(key: string, start: () => Promise<string | Seat>): Promise<Seat> {
  waiting?.abort();
  const abort = new AbortController();
  waiting = abort;
  const stream = lobby.seated({}, { ...auth(key), signal: abort.signal });
  const seen: Seat[] = [];
  let wanted = null as ((seat: Seat) => boolean) | null; // set once `start` says which seat
  let found: ((seat: Seat) => void) | null = null;
  const arrived = new Promise<Seat>((resolve) => (found = resolve));
  const reading = (async () => {
    for await (const seat of stream) {
      if (wanted?.(seat)) found!(seat);
      else seen.push(seat);
    }
  })();
  reading.catch(() => undefined);
  try {
    const started = await start();
    if (typeof started !== "string" && started.players.length) return started;
    const match: (seat: Seat) => boolean =
      typeof started === "string" ? (seat) => seat.ticket === started : (seat) => seat.matchId === started.matchId;
    wanted = match;
    const early = seen.find(match);
    return early ?? (await Promise.race([arrived, reading.then(() => Promise.reject(new Error("the Seated stream ended")))]));
  } finally {
    abort.abort();
    if (waiting === abort) waiting = null;
  }
}
