// Tournament pages, reached by URL: the public page of a tournament (#/t/<id>: standings, each round's
// pairings and byes, live tables with links to watch, a countdown to the next round), a player's own page
// (#/t/<id>/me: their next table and a button that takes them there; the token stays in this browser's
// local storage) and the organizer's controls (#/organize, and on the public page once a key is kept here:
// create from a pasted player list, start the next round, export the records as a download).
// Everything shown is pushed by the service (WatchTournament, WatchAssignment); nothing is polled.
import { Code, createClient, type Client } from "@connectrpc/connect";
import { auth, errorCode, explain, transport } from "./api";
import { h } from "./dom";
import { Tournaments, type Assignment, type TournamentPage } from "./gen/protos/tablehall/v1/tournaments_pb";

const tournaments: Client<typeof Tournaments> = createClient(Tournaments, transport);
const KEY = "tablehall:organizer-key";
const playerKey = (id: string) => `tablehall:player:${id}`;

let leaving: AbortController | null = null;
let ticking = 0;

/** Stops whatever the last tournament screen was following (its stream, its countdown). */
export function leaveTournament(): void {
  leaving?.abort();
  leaving = null;
  window.clearInterval(ticking);
}

function banner(text: string | null): void {
  const el = document.getElementById("error")!;
  el.textContent = text ?? "";
  el.hidden = !text;
}

/** Routes #/organize, #/t/<id> and #/t/<id>/me; false when the fragment is none of them. */
export function routeTournament(app: HTMLElement, fragment: string): boolean {
  const organize = fragment === "#/organize";
  const found = /^#\/t\/([0-9a-f]{16})(\/me)?(?:\?token=([\w-]+))?$/.exec(fragment);
  if (!organize && !found) return false;
  leaveTournament();
  banner(null);
  leaving = new AbortController();
  if (organize) organizerPage(app);
  else if (found![2]) void playerPage(app, found![1], found![3] ?? null, leaving.signal);
  else void publicPage(app, found![1], leaving.signal);
  return true;
}

/** Follows a server stream until it ends or the screen is left; a dropped stream is opened again. */
async function follow<T>(open: (signal: AbortSignal) => AsyncIterable<T>, signal: AbortSignal, see: (m: T) => void): Promise<void> {
  let failures = 0;
  while (!signal.aborted) {
    try {
      for await (const message of open(signal)) {
        failures = 0;
        see(message);
      }
      return;
    } catch (error) {
      if (signal.aborted) return;
      const code = errorCode(error);
      if (code !== Code.Unavailable && code !== Code.Unknown && code !== Code.Internal) return banner(explain(error));
      failures += 1;
      await new Promise((resolve) => window.setTimeout(resolve, Math.min(200 * 2 ** failures, 5000)));
    }
  }
}

// --- the public page ------------------------------------------------------------------------------

function countdown(ms: number): string {
  const s = Math.max(0, Math.ceil(ms / 1000));
  const m = Math.floor(s / 60);
  return m >= 60 ? `${Math.floor(m / 60)} h ${m % 60} min` : `${m}:${String(s % 60).padStart(2, "0")}`;
}

async function publicPage(app: HTMLElement, id: string, signal: AbortSignal): Promise<void> {
  const root = h("div", { class: "tournament", "data-tournament": id }, h("p", {}, "Loading the tournament…"));
  app.replaceChildren(root);
  let offset = 0; // the service's clock minus this browser's, from the last page
  let next = 0n;
  ticking = window.setInterval(() => {
    const el = root.querySelector<HTMLElement>("[data-countdown]");
    if (el && next > 0n) el.textContent = countdown(Number(next) - (Date.now() + offset));
  }, 250);
  // the organizer's key, once kept, makes the page live (results of delayed tables at once); others see
  // each result once it is as old as the tournament's spectator delay
  const key = localStorage.getItem(KEY);
  await follow((s) => tournaments.watchTournament({ tournamentId: id }, { ...auth(key), signal: s }), signal, (page) => {
    offset = Number(page.nowUnixMs) - Date.now();
    next = page.nextRoundUnixMs;
    root.replaceChildren(...drawPage(page, offset));
  });
}

function drawPage(page: TournamentPage, offset: number): HTMLElement[] {
  const t = page.tournament!;
  const delay = t.spectatorDelayS ? ` · spectators see tables ${t.spectatorDelayS} s late` : "";
  const head = h("header", { class: "t-head" }, h("h2", {}, t.name), h("p", {}, `${t.game} · ${t.format} · round ${t.currentRound} of ${t.rounds} · `, h("b", { "data-status": t.status }, t.status), delay));
  const next = page.nextRoundUnixMs > 0n ? h("p", { class: "countdown" }, "Next round starts in ", h("b", { "data-countdown": String(page.nextRoundUnixMs) }, countdown(Number(page.nextRoundUnixMs) - (Date.now() + offset)))) : null;
  const standings = page.standings!;
  const sb = t.game === "spectacular-bid";
  const table = h(
    "table",
    { class: "standings" },
    h("thead", {}, h("tr", {}, h("th", {}, "#"), h("th", {}, "Player"), h("th", {}, "Games"), ...(sb ? [h("th", {}, "Wins"), h("th", {}, "Points"), h("th", {}, "Buchholz")] : [h("th", {}, "Place pts"), h("th", {}, "Score")]))),
    h("tbody", {}, standings.standings.map((s) => h("tr", { "data-player": s.player }, h("td", {}, s.rank), h("td", {}, s.player), h("td", {}, s.games), ...(sb ? [h("td", {}, s.wins), h("td", {}, s.points), h("td", {}, s.buchholz)] : [h("td", {}, s.placementPoints), h("td", {}, s.score)])))),
  );
  const rounds = [...t.roundStates].reverse().map((r) => {
    const tables = t.tables.filter((x) => x.round === r.number);
    return h(
      "section",
      { class: "round", "data-round": r.number, "data-round-status": r.status },
      h("h3", {}, `Round ${r.number} — ${r.status}`),
      h("ul", {}, tables.map((x) => {
        const names = encodeURIComponent(x.players.join(","));
        const live = x.status === "in_progress";
        const result = x.resultJson ? resultText(JSON.parse(x.resultJson), x.players) : x.status;
        return h("li", { "data-match": x.matchId, "data-status": x.status }, `Table ${x.table}${x.attempt ? ` (replay ${x.attempt})` : ""}: ${x.players.join(" – ")} · `, live ? h("a", { href: `#match=${x.matchId}&names=${names}`, class: "watch", "data-watch": x.matchId }, "watch live") : result);
      })),
      r.byes.length ? h("p", { class: "byes" }, `Bye: ${r.byes.join(", ")}`) : null,
    );
  });
  const key = localStorage.getItem(KEY);
  return [head, next ?? h("span"), h("h3", {}, `Standings after round ${standings.afterRound}`), table, ...rounds, key ? controls(t.tournamentId, key) : h("p", { class: "organize-link" }, h("a", { href: "#/organize" }, "Organizer controls"))].filter((x): x is HTMLElement => x !== null);
}

function resultText(outcome: Record<string, any>, players: string[]): string {
  if (outcome.status === "voided") return "voided";
  if (typeof outcome.winner === "number") return `${players[outcome.winner]} won`;
  return "finished";
}

// --- the organizer's controls ---------------------------------------------------------------------

function controls(id: string, key: string): HTMLElement {
  const status = h("span", { class: "control-status", role: "status" }, "");
  const next = async () => {
    try {
      const t = await tournaments.nextRound({ tournamentId: id }, auth(key));
      status.textContent = `round ${t.currentRound + 1 > t.rounds ? t.currentRound : t.currentRound + 1} is being created`;
    } catch (error) {
      banner(explain(error));
    }
  };
  return h(
    "section",
    { class: "t-controls" },
    h("h3", {}, "Organizer"),
    h("button", { class: "primary", "data-do": "next-round", onclick: next }, "Start the next round"),
    " ",
    h("button", { "data-do": "export", onclick: () => void exportRecords(id, key, status) }, "Export the records"),
    " ",
    status,
  );
}

async function exportRecords(id: string, key: string, status: HTMLElement): Promise<void> {
  try {
    const records = [];
    for await (const r of tournaments.exportRecords({ tournamentId: id }, auth(key))) {
      records.push({ round: r.round, table: r.table, attempt: r.attempt, match_id: r.matchId, status: r.status, record: JSON.parse(r.recordJson) });
    }
    const blob = new Blob([JSON.stringify({ tournament_id: id, records }, null, 1)], { type: "application/json" });
    const link = h("a", { href: URL.createObjectURL(blob), download: `tournament-${id}.json` });
    document.body.append(link);
    link.click();
    link.remove();
    status.textContent = `${records.length} record(s) exported`;
  } catch (error) {
    banner(explain(error));
  }
}

function organizerPage(app: HTMLElement): void {
  const key = h("input", { name: "key", type: "password", placeholder: "tho_…", value: localStorage.getItem(KEY) ?? "", required: true });
  const name = h("input", { name: "name", required: true, placeholder: "Spring cup" });
  const game = h("select", { name: "game" }, h("option", { value: "spectacular-bid" }, "Spectacular Bid"), h("option", { value: "501" }, "501♠"));
  const format = h("select", { name: "format" }, h("option", { value: "round-robin" }, "round-robin"), h("option", { value: "swiss" }, "swiss"), h("option", { value: "seating" }, "seating (501♠)"));
  const players = h("textarea", { name: "players", rows: 6, placeholder: "one player a line, best first", required: true });
  const rounds = h("input", { name: "rounds", type: "number", min: 0, value: 0 });
  const delay = h("input", { name: "delay", type: "number", min: 0, max: 3600, value: 0 });
  const pause = h("input", { name: "pause", type: "number", min: 0, max: 86400, value: 30 });
  const points = h("input", { name: "points", type: "number", min: 5, step: 5, placeholder: "150 / 501" });
  const manual = h("input", { name: "manual", type: "checkbox" });
  const out = h("div", { class: "created" });
  const create = async (event: Event) => {
    event.preventDefault();
    localStorage.setItem(KEY, key.value.trim());
    const sb = game.value === "spectacular-bid";
    const options: Record<string, number> = {};
    if (points.value) options[sb ? "startPoints" : "startScore"] = Number(points.value);
    try {
      const reply = await tournaments.createTournament(
        {
          name: name.value, game: game.value, format: format.value, rounds: Number(rounds.value), manual: manual.checked, options,
          players: players.value.split("\n").map((p) => p.trim()).filter(Boolean),
          spectatorDelayS: Number(delay.value), roundPauseS: Number(pause.value),
        },
        auth(key.value.trim()),
      );
      const id = reply.tournamentId;
      out.replaceChildren(
        h("p", {}, "Created: ", h("a", { href: `#/t/${id}`, "data-created": id }, "the public page"), ` (${id}). Each player's link (shown once, keep them secret):`),
        h("ul", {}, reply.players.map((p) => h("li", { "data-player": p.player, "data-token": p.token }, `${p.seed}. ${p.player}: `, h("a", { href: `#/t/${id}/me?token=${p.token}` }, "player page")))),
      );
    } catch (error) {
      banner(explain(error));
    }
  };
  app.replaceChildren(
    h(
      "div",
      { class: "lobby" },
      h("form", { id: "organize", onsubmit: create }, h("h2", {}, "New tournament"), h("label", {}, "Organizer key ", key), h("label", {}, "Name ", name), h("label", {}, "Game ", game), h("label", {}, "Format ", format), h("label", {}, "Players ", players), h("label", {}, "Rounds (0: the format's) ", rounds), h("label", {}, "Start points / score ", points), h("label", {}, "Spectator delay (s) ", delay), h("label", {}, "Pause between rounds (s) ", pause), h("label", {}, manual, " I start each round myself"), h("button", { type: "submit", class: "primary" }, "Create tournament")),
      out,
    ),
  );
}

// --- a player's own page --------------------------------------------------------------------------

async function playerPage(app: HTMLElement, id: string, given: string | null, signal: AbortSignal): Promise<void> {
  if (given) {
    localStorage.setItem(playerKey(id), given);
    history.replaceState(null, "", `#/t/${id}/me`); // the token leaves the address bar
  }
  const token = localStorage.getItem(playerKey(id));
  const root = h("div", { class: "player-page", "data-tournament": id });
  app.replaceChildren(root);
  if (!token) {
    root.append(h("p", {}, "This browser has no player token for this tournament: open your player link once."));
    return;
  }
  await follow((s) => tournaments.watchAssignment({ tournamentId: id }, { ...auth(token), signal: s }), signal, (a) => root.replaceChildren(...drawAssignment(id, a)));
}

function drawAssignment(id: string, a: Assignment): HTMLElement[] {
  const head = h("h2", { "data-round": a.round }, `${a.player} — round ${a.round}`);
  const back = h("p", {}, h("a", { href: `#/t/${id}` }, "The tournament's page"));
  switch (a.status) {
    case "table": {
      const names = encodeURIComponent(a.players.join(","));
      const go = h("a", { class: "go button primary", href: `#match=${a.matchId}&token=${a.seatToken}&names=${names}`, "data-go": a.matchId }, "Go to my table");
      return [head, h("p", { "data-assignment": "table" }, `Your table: ${a.players.join(" – ")} (you sit at seat ${a.seat + 1}).`), go, back];
    }
    case "bye":
      return [head, h("p", { "data-assignment": "bye" }, "You have a bye this round: wait for the next one here."), back];
    case "finished":
      return [head, h("p", { "data-assignment": "finished" }, `The tournament is over: you finished #${a.rank}.`), back];
    default:
      return [head, h("p", { "data-assignment": "waiting" }, "Waiting for your next table: it appears here as soon as it is paired."), back];
  }
}
