// 501♠ on screen: scores, the bidding, the talon and the contract, the trick on the table, one's own
// cards (withheld while blind: F-4), and every legal action including the declare/give step.
// Everything comes from the seat's view JSON (workers/games/five_oh_one/view.py). With a decision limit
// the scoreboard counts the running decision down for whoever is to act.
import type { Act, View } from "./api";
import { decisionLeft, mmss } from "./clock";
import { actionButton, h, movePanel, seatName, type Send } from "./dom";

const SUITS: Record<string, string> = { S: "♠", H: "♥", D: "♦", C: "♣", NT: "no-trump" };
const PHASES: Record<string, string> = {
  deal: "Dealing",
  bidding: "Bidding",
  contract: "Contract: the declarer takes the talon",
  tricks: "Tricks",
  over: "Game over",
};

export function cardText(code: string): string {
  const rank = code[0] === "T" ? "10" : code[0];
  return `${rank}${SUITS[code[1]] ?? code[1]}`;
}

export function card(code: string, extra = ""): HTMLElement {
  const red = code[1] === "H" || code[1] === "D";
  return h("span", { class: `card ${red ? "red" : ""} ${extra}`.trim(), "data-card": code }, cardText(code));
}

/** With a decision limit: the running decision's time left, as it reads now (called every tick, and on
 * every view); the other seats show the limit each decision gets. */
export function paintFiveClocks(root: ParentNode, view: View, now: number | null): void {
  if (view.game !== "501" || typeof view.limit_ms !== "number") return;
  const left = decisionLeft(view, now);
  root.querySelectorAll<HTMLElement>("[data-clock]").forEach((el) => {
    const running = left !== null && left.seat === Number(el.dataset.clock);
    el.textContent = running ? `${mmss(left.ms)} ▶` : mmss(view.limit_ms);
    el.classList.toggle("running", running);
    el.classList.toggle("low", running && left.ms < Math.min(10_000, view.limit_ms / 3));
    if (running) el.dataset.leftMs = String(Math.round(left.ms));
    else delete el.dataset.leftMs;
  });
}

function scoreboard(view: View, names: string[]): HTMLElement {
  const timed = typeof view.limit_ms === "number";
  const won = (view.scores as number[]).map(() => 0);
  for (const t of view.tricks ?? []) won[t.winner] += 1;
  const rows = (view.scores as number[]).map((score, seat) => {
    const notes = [
      view.seat === seat ? "you" : "",
      view.dealer === seat ? "dealer" : "",
      view.sitting_out === seat ? "sits out" : "",
      view.declarer === seat ? "declarer" : "",
    ].filter(Boolean);
    return h(
      "tr",
      { class: `${view.turn === seat ? "to-move" : ""} ${view.seat === seat ? "me" : ""}`.trim() },
      h("td", {}, seatName(names, seat), notes.length ? ` (${notes.join(", ")})` : ""),
      h("td", { "data-score": seat }, score),
      h("td", {}, `${view.hand_sizes[seat]} cards`),
      h("td", {}, `${won[seat]} tricks`),
      timed ? h("td", { class: "clock", "data-clock": seat }, "") : null,
    );
  });
  return h(
    "table",
    { class: "scoreboard" },
    h(
      "thead",
      {},
      h("tr", {}, h("th", {}, "Player"), h("th", {}, "Score"), h("th", {}, "Hand"), h("th", {}, "Won"), timed ? h("th", {}, "Time to decide") : null),
    ),
    h("tbody", {}, rows),
  );
}

function contract(view: View, names: string[]): HTMLElement {
  const calls = (view.calls ?? []).map((c: View) => `${seatName(names, c.seat)} ${c.pass ? "passes" : `bids ${c.bid}`}`);
  const lines: (string | HTMLElement)[] = [`${PHASES[view.phase] ?? view.phase}`];
  if (view.turn !== null && view.turn !== undefined) lines.push(` · ${seatName(names, view.turn)} to act`);
  if (view.declarer !== null && view.declarer !== undefined) {
    lines.push(` · ${seatName(names, view.declarer)} declares, bid ${view.bid}${view.blind ? " (blind: doubled)" : ""}`);
  }
  if (view.trump) lines.push(` · trump ${SUITS[view.trump] ?? view.trump}, target ${view.target}`);
  return h(
    "div",
    { class: "contract" },
    h("p", { class: "status" }, lines),
    calls.length ? h("p", { class: "calls" }, "Calls: ", calls.join(" · ")) : null,
    view.talon ? h("p", { class: "talon" }, "Talon: ", view.talon.map((c: string) => card(c))) : null,
    (view.marriages ?? []).length
      ? h("p", {}, "Marriages: ", view.marriages.map((m: View) => `${seatName(names, m.seat)} ${SUITS[m.suit]} ${m.value}`).join(" · "))
      : null,
  );
}

function trick(view: View, names: string[]): HTMLElement | null {
  if (view.phase !== "tricks" && !(view.tricks ?? []).length) return null;
  const last = (view.tricks ?? []).at(-1);
  return h(
    "div",
    { class: "trick" },
    h("h3", {}, "On the table"),
    (view.trick ?? []).length
      ? h("div", {}, view.trick.map((p: View) => h("span", { class: "played" }, seatName(names, p.seat), ": ", card(p.card))))
      : h("p", {}, "No card led yet."),
    last
      ? h("p", { class: "last-trick" }, `Last trick, won by ${seatName(names, last.winner)}: `, last.cards.map((c: string) => card(c, "small")))
      : null,
  );
}

function declareForm(view: View, names: string[], send: Send, rule: View): HTMLElement {
  const trump = h("select", { name: "trump" }, ...(rule.trump as string[]).map((t) => h("option", { value: t }, SUITS[t] ?? t)));
  const target = h("input", { name: "target", type: "number", min: rule.target.min, max: rule.target.max, value: rule.target.min });
  const hand: string[] = view.hand ?? [];
  const gives = (rule.give.to as number[]).map((seat, i) =>
    h(
      "label",
      {},
      `Give ${seatName(names, seat)}: `,
      h("select", { name: "give", "data-seat": seat }, ...hand.map((c) => h("option", { value: c, selected: c === hand[i] }, cardText(c)))),
    ),
  );
  const declare = () => {
    const give: Record<string, string> = {};
    for (const el of gives) {
      const select = el.querySelector("select")!;
      give[select.dataset.seat!] = select.value;
    }
    send?.({ do: "declare", trump: trump.value, target: Number(target.value), give });
  };
  return h(
    "div",
    { class: "declare" },
    h("label", {}, "Trump: ", trump),
    h("label", {}, "Target: ", target),
    gives,
    h("button", { class: "action", "data-do": "declare", disabled: send === null, onclick: declare }, "Declare"),
  );
}

function actions(view: View, names: string[], send: Send): HTMLElement | null {
  const legal: Act[] = view.legal ?? [];
  if (!legal.length || view.phase === "over") return null;
  const controls: HTMLElement[] = [];
  for (const a of legal) {
    if (a.do === "play") {
      controls.push(actionButton(send, a, [card(a.card, "small"), a.marriage ? " + announce the marriage" : ""], a.marriage ? "marriage" : ""));
    } else if (a.do === "look") controls.push(actionButton(send, a, "Look at my cards (ends the blind double)"));
    else if (a.do === "pass") controls.push(actionButton(send, a, "Pass"));
    else if (a.do === "abandon") controls.push(actionButton(send, a, "Abandon the hand"));
    else if (a.do === "bid") {
      const amount = h("input", { type: "number", name: "amount", min: a.amount.min, max: a.amount.max, value: a.amount.min });
      const bid = h("button", { class: "action", "data-do": "bid", disabled: send === null, onclick: () => send?.({ do: "bid", amount: Number(amount.value) }) }, "Bid");
      controls.push(h("span", { class: "picker" }, amount, bid, ` (${a.amount.min}–${a.amount.max})`));
    } else if (a.do === "declare") controls.push(declareForm(view, names, send, a));
  }
  return movePanel(send, legal, controls);
}

function results(view: View, names: string[]): HTMLElement | null {
  const hands: View[] = view.hands ?? [];
  if (!hands.length) return null;
  return h(
    "details",
    { class: "rounds" },
    h("summary", {}, `Hands so far (${hands.length})`),
    h(
      "table",
      {},
      h("tr", {}, h("th", {}, "#"), h("th", {}, "Declarer"), h("th", {}, "Contract"), h("th", {}, "Result"), h("th", {}, "Changes")),
      hands.map((r, i) =>
        h(
          "tr",
          {},
          h("td", {}, i + 1),
          h("td", {}, r.declarer === null ? "all passed" : seatName(names, r.declarer)),
          h("td", {}, r.declarer === null ? "—" : `${r.bid}${r.target ? ` → ${r.target} ${SUITS[r.trump] ?? r.trump}` : ""}${r.blind ? " blind" : ""}`),
          h("td", {}, r.abandoned ? "abandoned" : r.declarer === null ? "—" : r.made ? "made" : "failed"),
          h("td", {}, (r.deltas as number[]).map((d) => (d > 0 ? `+${d}` : `${d}`)).join(" / ")),
        ),
      ),
    ),
  );
}

export function fiveResult(view: View, names: string[]): string {
  if (view.status === "voided") return `Game voided (${view.void_reason}).`;
  const winners = (view.winners as number[]).map((s) => seatName(names, s)).join(" and ");
  return `${winners} win${view.winners.length === 1 ? "s" : ""} — ${(view.scores as number[]).join(" / ")}`;
}

export function renderFive(view: View, names: string[], send: Send, showHand = true): HTMLElement {
  const hand: string[] | null = showHand ? view.hand : null;
  const blind = showHand && view.seat !== null && view.hand === null && view.phase === "bidding";
  return h(
    "section",
    { class: "game five", "data-phase": view.phase },
    scoreboard(view, names),
    contract(view, names),
    view.phase === "over" ? h("p", { class: "result", "data-result": view.status }, fiveResult(view, names)) : null,
    trick(view, names),
    hand ? h("div", { class: "hand" }, h("h3", {}, "Your cards"), hand.map((c) => card(c))) : null,
    blind ? h("p", { class: "blind" }, "Your cards are face down: bid blind for a double result, or look at them.") : null,
    showHand ? actions(view, names, send) : null,
    results(view, names),
  );
}
