// The tablehall web page: create or join a match, follow one's own view live (server-streamed Watch),
// act, and on a shared device hand over between turns. Tokens stay in this tab (sessionStorage) and in
// invitation links (the URL fragment, never sent to a server).
import "./style.css";
import { act, errorCode, explain, getView, matches, watch, type Act, type View } from "./api";
import { MatchTime } from "./clock";
import { h, newUi, seatName, type Send } from "./dom";
import { paintFiveClocks, renderFive } from "./five";
import { paintClocks as paintSBClocks, renderSB } from "./sb";
import { Code, ConnectError } from "@connectrpc/connect";
import { playPanel } from "./play";
import { leaveTournament, routeTournament } from "./tournament";

interface Table {
  matchId: string;
  names: string[];
  tokens: Record<number, string>; // the seats played in this tab
  shared: boolean;
  invites: { seat: number; player: string; token: string }[]; // the other seats, right after creating
}

const app = document.getElementById("app")!;
let current: Game | null = null;

function save(table: Table): void {
  sessionStorage.setItem(`tablehall:${table.matchId}`, JSON.stringify(table));
  history.replaceState(null, "", `#match=${table.matchId}`);
}

function banner(text: string | null): void {
  const el = document.getElementById("error")!;
  el.textContent = text ?? "";
  el.hidden = !text;
  if (text) el.setAttribute("data-error", text);
  else el.removeAttribute("data-error");
}

/** The clocks of either game as they read at match time `now` (each painter ignores the other game). */
function paintClocks(root: ParentNode, view: View, now: number | null): void {
  paintSBClocks(root, view, now);
  paintFiveClocks(root, view, now);
}

// --- the lobby -----------------------------------------------------------------------------------

function lobby(message?: string): void {
  current?.close();
  current = null;
  history.replaceState(null, "", location.pathname + location.search);
  const game = h("select", { name: "game" }, h("option", { value: "spectacular-bid" }, "Spectacular Bid (2 players)"), h("option", { value: "501" }, "501♠ (3 or 4 players)"));
  const me = h("input", { name: "name", value: "You", required: true });
  const others = h("input", { name: "others", value: "Bia" });
  const shared = h("input", { type: "checkbox", name: "shared" });
  const points = h("input", { type: "number", name: "points", min: 5, step: 5, placeholder: "150" });
  const bank = h("input", { type: "number", name: "bank", min: 1, placeholder: "120" });
  const score = h("input", { type: "number", name: "score", min: 1, placeholder: "501" });
  const limit = h("input", { type: "number", name: "limit", min: 1, placeholder: "off" });
  const sbOnly = h("div", { class: "sb-only" }, h("label", {}, "Start points ", points), h("label", {}, "Bank (s) ", bank), h("label", {}, shared, " One shared device (hand-over screens)"));
  const fiveOnly = h("div", { class: "five-only", hidden: true }, h("label", {}, "Start score ", score), h("label", {}, "Decision limit (s) ", limit));
  game.addEventListener("change", () => {
    const sb = game.value === "spectacular-bid";
    sbOnly.hidden = !sb;
    fiveOnly.hidden = sb;
    others.value = sb ? "Bia" : "Bia, Cid";
  });
  const create = async (event: Event) => {
    event.preventDefault();
    const players = [me.value.trim() || "You", ...others.value.split(",").map((n) => n.trim()).filter(Boolean)];
    const sb = game.value === "spectacular-bid";
    const options: Record<string, number> = {};
    if (sb && points.value) options.startPoints = Number(points.value);
    if (sb && bank.value) options.bankS = Number(bank.value);
    if (!sb && score.value) options.startScore = Number(score.value);
    if (!sb && limit.value) options.decisionLimitS = Number(limit.value);
    try {
      const reply = await matches.createMatch({ game: game.value, players, options, sharedDevice: sb && shared.checked });
      const seats = reply.seats.map((s) => ({ seat: s.seat, player: s.player, token: s.token }));
      const mine = sb && shared.checked ? seats : seats.slice(0, 1);
      const table: Table = {
        matchId: reply.matchId,
        names: players,
        tokens: Object.fromEntries(mine.map((s) => [s.seat, s.token])),
        shared: sb && shared.checked,
        invites: sb && shared.checked ? [] : seats.slice(1),
      };
      save(table);
      open(table);
    } catch (error) {
      banner(explain(error));
    }
  };
  const matchId = h("input", { name: "match", placeholder: "16 hex digits", required: true });
  const token = h("input", { name: "token", placeholder: "your seat's token (empty: watch)" });
  const join = async (event: Event) => {
    event.preventDefault();
    await joinWith(matchId.value.trim(), token.value.trim() || null, []);
  };
  app.replaceChildren(
    h(
      "div",
      { class: "lobby" },
      message ? h("p", { class: "notice" }, message) : null,
      playPanel((matchId, key, names) => void joinWith(matchId, key, names), banner),
      h("form", { id: "create", onsubmit: create }, h("h2", {}, "New match"), h("label", {}, "Game ", game), h("label", {}, "Your name ", me), h("label", {}, "Other players ", others), sbOnly, fiveOnly, h("button", { type: "submit" }, "Create match")),
      h("form", { id: "join", onsubmit: join }, h("h2", {}, "Join a match"), h("label", {}, "Match ", matchId), h("label", {}, "Token ", token), h("button", { type: "submit" }, "Join")),
      h("p", { class: "notice" }, "Tournaments: ", h("a", { href: "#/organize" }, "organizer controls"), " · a tournament's page is #/t/<id>"),
    ),
  );
}

async function joinWith(matchId: string, token: string | null, names: string[]): Promise<void> {
  try {
    const { view } = await getView(matchId, token);
    const seat: number | null = view.seat ?? null;
    const count = (view.points ?? view.scores ?? []).length;
    const table: Table = {
      matchId,
      names: Array.from({ length: count }, (_, i) => names[i] || `Seat ${i}`),
      tokens: seat !== null && token ? { [seat]: token } : {},
      shared: false,
      invites: [],
    };
    save(table);
    open(table);
  } catch (error) {
    if (!token && ConnectError.from(error).metadata.get("tablehall-error") === "spectator_delay") {
      // a delayed tournament table: nothing is old enough to show yet; Watch shows each change once it is
      open({ matchId, names, tokens: {}, shared: false, invites: [] });
      return;
    }
    banner(explain(error));
  }
}

// --- a table -------------------------------------------------------------------------------------

function open(table: Table): void {
  current?.close();
  banner(null);
  current = new Game(table);
  current.start();
}

class Game {
  clock = new MatchTime();
  seq = 0n;
  view: View | null = null;
  holder: number | null = null; // shared device: the seat holding it
  busy = false; // an action is on its way: controls are drawn disabled until its answer, never a dropped press
  starting = false; // shared device: Continue is being pressed for every seat
  drawn = 0; // render generation: a slower render never overwrites a newer one
  aborter = new AbortController();
  ticker = 0;
  board = h("div", { class: "board" });
  ui = newUi();

  constructor(readonly table: Table) {}

  get feedToken(): string | null {
    const seats = Object.keys(this.table.tokens).map(Number).sort();
    return seats.length ? this.table.tokens[seats[0]] : null;
  }

  start(): void {
    app.replaceChildren(this.header(), this.invites(), this.board);
    this.ticker = window.setInterval(() => this.view && paintClocks(this.board, this.view, this.clock.now()), 100);
    void this.follow();
  }

  close(): void {
    this.aborter.abort();
    window.clearInterval(this.ticker);
  }

  header(): HTMLElement {
    const rules = h("details", { class: "rules" }, h("summary", {}, "Rules (reading them pauses nothing)"));
    rules.addEventListener("toggle", async () => {
      if (rules.querySelector("pre") || !this.view) return;
      try {
        const reply = await matches.getRules({ game: this.view.game });
        rules.append(h("pre", {}, reply.text));
      } catch (error) {
        banner(explain(error));
      }
    });
    const seats = Object.keys(this.table.tokens).map(Number);
    const who = this.table.shared ? "one shared device" : seats.length ? `you play ${seatName(this.table.names, seats[0])}` : "watching";
    const sound = h("button", { class: "sound", "aria-pressed": String(localStorage.getItem("tablehall:sound") === "on"), title: "a beep each second when your time is low" }, "Low-time sound");
    sound.addEventListener("click", () => {
      const on = localStorage.getItem("tablehall:sound") !== "on";
      localStorage.setItem("tablehall:sound", on ? "on" : "off");
      sound.setAttribute("aria-pressed", String(on));
    });
    return h(
      "header",
      { class: "table-head" },
      h("span", { class: "who" }, this.table.names.join(" · "), ` — ${who}`),
      h("code", { "data-match": this.table.matchId, title: "match id" }, this.table.matchId),
      h("span", { class: "link", id: "connection", role: "status" }, ""),
      sound,
      h("button", { class: "leave", onclick: () => lobby() }, "Leave"),
      rules,
    );
  }

  invites(): HTMLElement | string {
    if (!this.table.invites.length) return "";
    const names = encodeURIComponent(this.table.names.join(","));
    return h(
      "details",
      { class: "invites", open: true, id: "invites" },
      h("summary", {}, "Invite the other players (each token is shown once: keep it secret)"),
      this.table.invites.map((s) => {
        const link = `${location.origin}${location.pathname}#match=${this.table.matchId}&token=${s.token}&names=${names}`;
        return h(
          "p",
          { "data-invite-seat": s.seat, "data-token": s.token },
          `${s.player}: `,
          h("a", { href: link, target: "_blank" }, "join link"),
          " · or let a bot play it: ",
          h("code", {}, `tablehall bot --match ${this.table.matchId} --token ${s.token}`),
        );
      }),
    );
  }

  connection(text: string): void {
    const el = document.getElementById("connection");
    if (el) el.textContent = text;
  }

  async follow(): Promise<void> {
    let failures = 0;
    while (!this.aborter.signal.aborted) {
      try {
        this.connection("live");
        for await (const update of watch(this.table.matchId, this.feedToken, this.seq, this.aborter.signal)) {
          failures = 0;
          this.see(update.seq, JSON.parse(update.viewJson), Number(update.matchTimeMs));
          if (update.over) {
            this.connection("match over");
            return;
          }
        }
        return;
      } catch (error) {
        if (this.aborter.signal.aborted) return;
        const code = errorCode(error);
        if (code !== Code.Unavailable && code !== Code.Unknown && code !== Code.Canceled && code !== Code.Internal) {
          banner(explain(error));
          this.connection("stopped");
          return;
        }
        failures += 1;
        this.connection(`reconnecting (${failures})…`);
        await new Promise((resolve) => window.setTimeout(resolve, Math.min(200 * 2 ** failures, 5000)));
      }
    }
  }

  see(seq: bigint, view: View, reading?: number): void {
    if (seq < this.seq) return;
    if (seq > this.seq) this.ui.previous = this.view;
    this.seq = seq;
    this.view = view;
    this.clock.observe(view, reading);
    this.foldInvites(view);
    void this.render();
  }

  /** The invitations fold once every seat is taken: each other seat has acted (pressed Continue, called). */
  foldInvites(view: View): void {
    const panel = document.getElementById("invites") as HTMLDetailsElement | null;
    if (!panel || !panel.open || panel.dataset.folded) return;
    const others = this.table.invites.map((i) => i.seat);
    const acted = (seat: number) =>
      view.game === "501"
        ? (view.calls ?? []).some((c: View) => c.seat === seat) || (view.hands ?? []).length > 0 || view.phase === "tricks" || view.phase === "contract"
        : (view.ready ?? []).includes(seat) || view.phase !== "ready" || view.round > 1;
    if (others.every(acted)) {
      panel.open = false;
      panel.dataset.folded = "1";
    }
  }

  sender(seat: number): Send {
    return (action: Act) => void this.send(seat, action);
  }

  async send(seat: number, action: Act): Promise<void> {
    if (this.busy) return;
    if (action.do === "resign" && !window.confirm("Resign the match?")) return;
    this.busy = true;
    this.board.classList.add("busy");
    this.board.querySelectorAll<HTMLButtonElement>("button.action").forEach((b) => (b.disabled = true));
    banner(null); // the last refusal is answered by trying again
    try {
      const { seq, view } = await act(this.table.matchId, this.table.tokens[seat], action);
      banner(null);
      if (!this.table.shared) this.see(seq, view);
    } catch (error) {
      banner(explain(error));
    } finally {
      this.busy = false;
      await this.render(); // the controls come back before the board stops looking busy
      this.board.classList.remove("busy");
    }
  }

  draw(view: View, send: Send, showHand: boolean, extra: (HTMLElement | null)[] = []): void {
    const focused = document.activeElement?.getAttribute("data-key") ?? null;
    const ctx = { names: this.table.names, send, showHand, ui: this.ui, redraw: () => this.draw(view, send, showHand, extra), width: this.board.clientWidth || window.innerWidth };
    const body = view.game === "501" ? renderFive(view, ctx) : renderSB(view, ctx);
    body.dataset.seq = String(this.seq);
    this.board.replaceChildren(...extra.filter((e): e is HTMLElement => e !== null), body);
    this.board.dataset.seq = String(this.seq);
    this.board.dataset.phase = view.phase;
    paintClocks(this.board, view, this.clock.now());
    if (focused) this.board.querySelector<HTMLElement>(`[data-key="${focused}"]`)?.focus();
  }

  async render(): Promise<void> {
    const view = this.view;
    if (!view) return;
    const generation = ++this.drawn;
    const seats = Object.keys(this.table.tokens).map(Number);
    if (!this.table.shared) {
      const seat = seats[0];
      this.draw(view, seat === undefined || this.busy ? null : this.sender(seat), seat !== undefined);
      return;
    }
    // one shared device: a public screen, a hand-over screen, or the view of the seat holding it
    if (view.phase === "over") return this.draw(view, null, false);
    if (view.game === "spectacular-bid" && view.phase === "ready") {
      const start = h("button", { class: "action", "data-do": "ready", disabled: this.starting, onclick: () => void this.readyAll() }, "Start the clocks");
      return this.draw(view, null, false, [h("div", { class: "handover" }, h("p", {}, `Round ${view.round} is dealt.`), start)]);
    }
    const turn: number | null = view.turn ?? null;
    if (turn !== null && (view.hand_over || this.holder !== turn)) return this.handOver(turn, view.hand_over);
    const seat = turn ?? this.holder ?? seats[0];
    try {
      const mine = await getView(this.table.matchId, this.table.tokens[seat]);
      if (generation !== this.drawn) return;
      this.clock.observe(mine.view);
      this.draw(mine.view, this.busy ? null : this.sender(seat), true);
    } catch (error) {
      banner(explain(error));
    }
  }

  handOver(turn: number, reveal: boolean): void {
    const name = seatName(this.table.names, turn);
    const go = async () => {
      this.holder = turn;
      if (reveal) await this.send(turn, { do: "reveal" });
      else void this.render();
    };
    this.board.replaceChildren(
      h(
        "div",
        { class: "handover", "data-handover": turn },
        h("h2", {}, `Pass the device to ${name}`),
        h("p", {}, reveal ? "The clock waits until you reveal your tiles." : "Nobody else should look now."),
        h("button", { class: "action", "data-do": "reveal", onclick: go }, `I am ${name}: show my tiles`),
      ),
    );
    this.board.dataset.phase = "handover";
  }

  async readyAll(): Promise<void> {
    this.starting = true;
    this.board.querySelectorAll<HTMLButtonElement>("button.action").forEach((b) => (b.disabled = true));
    try {
      for (const [seat, token] of Object.entries(this.table.tokens)) {
        const { view } = await getView(this.table.matchId, token);
        if ((view.legal ?? []).some((a: View) => a.do === "ready")) await this.send(Number(seat), { do: "ready" });
      }
    } finally {
      this.starting = false;
    }
  }
}

// --- one view drawn with no service: the reference screenshots (tests/test_web_screens.py) --------

/** Draws `view` as the seat it belongs to would see it, talking to no service: taps only collect the
 * actions they would send (`window.tablehallSent`). `previous` is the view before it (the newest tile). */
function showStatic(view: View, names: string[], previous: View | null = null): void {
  current?.close();
  current = null;
  const board = h("div", { class: "board" });
  const ui = newUi();
  ui.previous = previous;
  const sent: Act[] = [];
  Object.assign(window, { tablehallSent: sent });
  const draw = (): void => {
    const ctx = { names, send: (a: Act) => void sent.push(a), showHand: view.seat !== null, ui, redraw: draw, width: board.clientWidth || window.innerWidth };
    board.replaceChildren(view.game === "501" ? renderFive(view, ctx) : renderSB(view, ctx));
    board.dataset.phase = view.phase;
    paintClocks(board, view, null);
  };
  app.replaceChildren(board);
  draw();
}

Object.assign(window, { tablehallShow: showStatic });

// --- start: a link to a match (#match=…&token=…), this tab's table, or the lobby -----------------

function boot(): void {
  leaveTournament();
  if (routeTournament(app, location.hash)) {
    current?.close();
    current = null;
    return;
  }
  const params = new URLSearchParams(location.hash.slice(1));
  const matchId = params.get("match");
  if (!matchId) return lobby();
  const token = params.get("token");
  const names = (params.get("names") ?? "").split(",").filter(Boolean);
  if (token) {
    void joinWith(matchId, token, names);
    return;
  }
  const saved = sessionStorage.getItem(`tablehall:${matchId}`);
  if (saved) return open(JSON.parse(saved) as Table);
  void joinWith(matchId, null, names); // no seat here: watch
}

window.addEventListener("hashchange", boot); // tournament pages link to tables and back
boot();
