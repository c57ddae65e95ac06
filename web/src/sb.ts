// Spectacular Bid on screen: points, both clocks, the layout with its spinner arms, one's own tiles,
// every legal action, and the rounds so far. Everything shown comes from the seat's view JSON
// (workers/games/spectacular_bid/view.py); the page never guesses a rule.
import type { Act, View } from "./api";
import { decisionLeft, mmss, sbClocks } from "./clock";
import { actionButton, amountPicker, h, movePanel, seatName, type Send } from "./dom";

const PHASES: Record<string, string> = {
  deal: "Dealing",
  ready: "Round dealt: press Continue to start the clocks",
  auction: "Lead auction",
  lead: "Lead",
  play: "Play",
  over: "Match over",
};

/** A tile as it lies: `a` on the left (or top), `b` on the right (or bottom). */
function tile(a: string | number, b: string | number, extra = ""): HTMLElement {
  const double = String(a) === String(b);
  return h("span", { class: `tile ${double ? "double" : ""} ${extra}`.trim(), title: `[${a}|${b}]` }, h("i", {}, a), h("i", {}, b));
}

function split(text: string): [string, string] {
  const [a, b] = text.split("-");
  return [a, b];
}

/** The layout as a cross: the main line W … lead … E, and the arms N (up) and S (down) at the spinner. */
export function layoutView(layout: View): HTMLElement {
  if (!layout.lead) return h("div", { class: "layout empty" }, "The layout is empty: the lead opens it.");
  const spinner: number | null = layout.spinner;
  const lines: Record<string, string[]> = layout.lines;
  const row: { a: string; b: string; lead?: boolean }[] = [];
  for (const t of [...lines.W].reverse()) {
    const [inner, outer] = split(t);
    row.push({ a: outer, b: inner });
  }
  const [w, e] = split(layout.lead);
  row.push({ a: w, b: e, lead: true });
  for (const t of lines.E) {
    const [inner, outer] = split(t);
    row.push({ a: inner, b: outer });
  }
  const isSpinner = (a: string, b: string) => spinner !== null && a === String(spinner) && b === String(spinner);
  const column = row.findIndex((t) => isSpinner(t.a, t.b)) + 1;
  const north = lines.N ?? [];
  const south = lines.S ?? [];
  const grid = h("div", { class: "layout-grid" });
  const mainRow = north.length + 1;
  row.forEach((t, i) => {
    const el = tile(t.a, t.b, `${t.lead ? "lead" : ""} ${isSpinner(t.a, t.b) ? "spinner" : ""}`);
    el.style.gridRow = String(mainRow);
    el.style.gridColumn = String(i + 1);
    grid.append(el);
  });
  if (column > 0) {
    north.forEach((t, i) => {
      const [inner, outer] = split(t);
      const el = tile(outer, inner, "vertical arm-n");
      el.style.gridRow = String(mainRow - 1 - i);
      el.style.gridColumn = String(column);
      grid.append(el);
    });
    south.forEach((t, i) => {
      const [inner, outer] = split(t);
      const el = tile(inner, outer, "vertical arm-s");
      el.style.gridRow = String(mainRow + 1 + i);
      el.style.gridColumn = String(column);
      grid.append(el);
    });
  }
  const ends = Object.entries(layout.open_ends as Record<string, number>)
    .map(([end, pip]) => `${end} ${pip}`)
    .join(" · ");
  const scores = layout.count > 0 && layout.count % 5 === 0;
  return h(
    "div",
    { class: "layout" },
    h("div", { class: "layout-scroll" }, grid),
    h(
      "p",
      { class: "ends" },
      `Open ends: ${ends || "none"} — count `,
      h("strong", { "data-count": layout.count }, layout.count),
      scores ? h("span", { class: "scored" }, ` — the last play scored ${layout.count}`) : "",
      spinner !== null ? ` — spinner [${spinner}|${spinner}]${north.length || south.length ? "" : " (arms N and S open once both its sides are taken)"}` : "",
    ),
  );
}

/** Both clocks as they read now (called every tick, and on every view). */
export function paintClocks(root: ParentNode, view: View, now: number | null): void {
  if (view.game !== "spectacular-bid") return;
  const left = decisionLeft(view, now);
  sbClocks(view, now).forEach((c, seat) => {
    const el = root.querySelector<HTMLElement>(`[data-clock="${seat}"]`);
    if (!el) return;
    const delay = c.delayMs !== null ? ` · delay ${(c.delayMs / 1000).toFixed(1)}s` : "";
    el.textContent = `${mmss(c.bankMs)}${delay}${c.running ? " ▶" : ""}`;
    el.classList.toggle("running", c.running);
    el.classList.toggle("low", c.bankMs < 15000);
    if (left !== null && left.seat === seat) el.dataset.leftMs = String(Math.round(left.ms)); // delay + bank
    else delete el.dataset.leftMs;
  });
}

function scoreboard(view: View, names: string[]): HTMLElement {
  const rows = (view.points as number[]).map((points, seat) =>
    h(
      "tr",
      { class: `${view.turn === seat ? "to-move" : ""} ${view.seat === seat ? "me" : ""}`.trim() },
      h("td", {}, seatName(names, seat), view.seat === seat ? " (you)" : "", view.jockey === seat ? " · jockey" : ""),
      h("td", { "data-points": seat }, points),
      h("td", { class: "clock", "data-clock": seat }, ""),
      h("td", {}, `${view.hand_sizes[seat]} tiles`),
    ),
  );
  return h(
    "table",
    { class: "scoreboard" },
    h("thead", {}, h("tr", {}, h("th", {}, "Player"), h("th", {}, "Points"), h("th", {}, "Bank"), h("th", {}, "Hand"))),
    h("tbody", {}, rows),
  );
}

function status(view: View, names: string[]): HTMLElement {
  const parts: (string | HTMLElement)[] = [`Round ${view.round} · ${PHASES[view.phase] ?? view.phase}`];
  if (view.turn !== null && view.phase !== "over") parts.push(` · ${seatName(names, view.turn)} to move`);
  if (view.auction) parts.push(` · standing bid ${view.auction.bid} by ${seatName(names, view.auction.bidder)}`);
  if (view.hand_over) parts.push(" · hand-over: the clock waits until the next player reveals");
  parts.push(` · boneyard ${view.boneyard_size}`);
  return h("p", { class: "status" }, parts);
}

const REASONS: Record<string, string> = { points: "on points", time: "on time", resign: "by resignation" };

export function sbResult(view: View, names: string[]): string {
  if (view.status === "voided") return `Match voided (${view.void_reason}): no result, no rating change.`;
  return `${seatName(names, view.winner)} wins ${REASONS[view.reason] ?? view.reason} — ${(view.points as number[]).join(" : ")}`;
}

function actions(view: View, send: Send): HTMLElement | null {
  const legal: Act[] = view.legal ?? [];
  if (!legal.length || view.phase === "over") return null;
  const counts: (number | null)[] = view.counts ?? [];
  const controls: HTMLElement[] = [];
  const plays = legal.map((a, i) => ({ a, count: counts[i] })).filter((p) => p.a.do === "play");
  for (const { a, count } of plays) {
    const [x, y] = split(a.tile);
    const where = a.end ? ` at ${a.end}` : ` (lead: ${x} at W)`;
    const gain = count !== null && count !== undefined && count > 0 && count % 5 === 0 ? ` scores ${count}` : "";
    controls.push(actionButton(send, a, [tile(x, y, "small"), `${where} → count ${count ?? "?"}${gain}`], gain ? "scoring" : ""));
  }
  const simple: Record<string, string> = {
    ready: "Continue (start the clocks)",
    reveal: "Reveal my tiles",
    draw: "Draw a tile",
    accept: "Accept the bid",
    decline: "Decline (the jockey leads free)",
  };
  for (const a of legal) if (simple[a.do]) controls.push(actionButton(send, a, simple[a.do]));
  for (const kind of ["bid", "raise"]) {
    const amounts = legal.filter((a) => a.do === kind).map((a) => Number(a.amount));
    if (amounts.length) controls.push(amountPicker(send, kind, amounts, kind === "bid" ? "Bid" : "Raise"));
  }
  return movePanel(send, legal, controls);
}

function pastRounds(view: View, names: string[]): HTMLElement | null {
  const rounds: View[] = view.past_rounds ?? [];
  if (!rounds.length) return null;
  const auction = (a: any) =>
    a === null ? "—" : a === "declined" ? "declined" : `${seatName(names, a.winner)} bought the lead for ${a.bid} (paid ${a.paid})`;
  return h(
    "details",
    { class: "rounds" },
    h("summary", {}, `Rounds so far (${rounds.length})`),
    h(
      "table",
      {},
      h("tr", {}, h("th", {}, "#"), h("th", {}, "Ended by"), h("th", {}, "Lead"), h("th", {}, "Auction")),
      rounds.map((r, i) =>
        h(
          "tr",
          {},
          h("td", {}, i + 1),
          h("td", {}, r.end === "domino" ? `domino (${seatName(names, r.domino_by)})` : (r.end ?? "—")),
          h("td", {}, seatName(names, r.lead_by)),
          h("td", {}, auction(r.auction)),
        ),
      ),
    ),
  );
}

/** The whole table for one seat's view (`showHand` false on a shared device's public screens). */
export function renderSB(view: View, names: string[], send: Send, showHand = true): HTMLElement {
  const hand: string[] | null = showHand ? view.hand : null;
  return h(
    "section",
    { class: "game sb", "data-phase": view.phase, "data-seq": "" },
    scoreboard(view, names),
    status(view, names),
    view.phase === "over" ? h("p", { class: "result", "data-result": view.status }, sbResult(view, names)) : null,
    layoutView(view.layout),
    hand
      ? h("div", { class: "hand" }, h("h3", {}, "Your tiles"), hand.map((t) => tile(...split(t))))
      : null,
    showHand ? actions(view, send) : null,
    pastRounds(view, names),
  );
}
