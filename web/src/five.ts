// 501♠ at the table: the players around it (you at the bottom, the others clockwise), the Trick in the
// middle, the talon face down and turned over once exposed, a marriage announced, your cards drawn as faces
// and sorted by suit (the ones you may play raised), the bidding, declaring as a guided step (trump, then
// target, then one card tapped for each opponent; nothing is given away by default), each hand's summary
// held on screen until dismissed, and the result. Everything comes from the seat's view JSON
// (workers/games/five_oh_one/view.py): legality is the view's `legal` list.
import type { Act, View } from "./api";
import { beep, clockText, decisionLeft, isLow } from "./clock";
import { actionButton, dock, h, seatName, type Ctx } from "./dom";
import { cardBack, cardName, cardSvg, plural, rankText, SUIT_NAMES, SUIT_SIGNS } from "./pieces";

const SUIT_ORDER = ["S", "H", "C", "D"]; // black, red, black, red
const RANK_ORDER = ["A", "T", "K", "Q", "J", "9"];

export function cardText(code: string): string {
  return `${rankText(code)}${SUIT_SIGNS[code[1]] ?? code[1]}`;
}

function trumpText(t: string): string {
  return t === "NT" ? "no-trump" : `${SUIT_SIGNS[t]} ${SUIT_NAMES[t]}`;
}

/** Your hand as players hold it: by suit, then by rank (display only). */
export function sortCards(cards: string[]): string[] {
  const key = (c: string) => SUIT_ORDER.indexOf(c[1]) * 10 + RANK_ORDER.indexOf(c[0]);
  return [...cards].sort((a, b) => key(a) - key(b));
}

/** With a decision limit: the running decision's time left, as it reads now (every tick, and on every
 * view); the other seats show the limit each decision gets. */
export function paintFiveClocks(root: ParentNode, view: View, now: number | null): void {
  if (view.game !== "501" || typeof view.limit_ms !== "number") return;
  const left = decisionLeft(view, now);
  root.querySelectorAll<HTMLElement>("[data-clock]").forEach((el) => {
    const seat = Number(el.dataset.clock);
    const running = left !== null && left.seat === seat;
    el.textContent = running ? clockText(left.ms) : clockText(view.limit_ms);
    el.classList.toggle("running", running);
    const low = running && isLow(left.ms, view.limit_ms);
    el.classList.toggle("low", low);
    if (running) el.dataset.leftMs = String(Math.round(left.ms));
    else delete el.dataset.leftMs;
    if (low && seat === view.seat) beep(left.ms);
  });
}

/** Where each seat sits on screen: you at the bottom, the next players clockwise (left, top, right). */
function places(view: View): Record<number, string> {
  const seats = (view.scores as number[]).length;
  const me: number = view.seat ?? 0;
  const order = seats === 4 ? ["bottom", "left", "top", "right"] : ["bottom", "left", "right"];
  const out: Record<number, string> = {};
  for (let i = 0; i < seats; i++) out[(me + i) % seats] = order[i];
  return out;
}

function tricksWon(view: View): number[] {
  const won = (view.scores as number[]).map(() => 0);
  for (const t of view.tricks ?? []) won[t.winner] += 1;
  return won;
}

function seatBox(view: View, seat: number, where: string, ctx: Ctx): HTMLElement {
  const won = tricksWon(view)[seat];
  const badges = [
    view.dealer === seat ? "dealer" : "",
    view.sitting_out === seat ? "sits out" : "",
    view.declarer === seat ? `declarer${view.target ? ` ${view.target}` : view.bid ? ` ${view.bid}` : ""}` : "",
    (view.looked ?? []).includes(seat) ? "looked" : "",
  ].filter(Boolean);
  const call = (view.calls ?? []).filter((c: View) => c.seat === seat).at(-1);
  return h(
    "div",
    { class: `player seat-${where} ${view.seat === seat ? "me" : ""} ${view.turn === seat ? "to-move" : ""}`.trim(), "data-seat": seat },
    h("span", { class: "name" }, seatName(ctx.names, seat), view.seat === seat ? " (you)" : "", ...badges.map((b) => h("span", { class: "badge" }, b))),
    h("span", { class: "points" }, h("b", { "data-score": seat }, view.scores[seat])),
    h("span", { class: "hand-size" }, plural(view.hand_sizes[seat], "card"), won ? ` · ${plural(won, "trick")}` : ""),
    call && view.phase === "bidding" ? h("span", { class: "call" }, call.pass ? "pass" : `bid ${call.bid}`) : null,
    typeof view.limit_ms === "number" ? h("span", { class: "clock", "data-clock": seat, role: "timer" }) : null,
  );
}

function marriageNews(view: View, ctx: Ctx): HTMLElement | null {
  const now: View[] = view.marriages ?? [];
  const before: View[] = ctx.ui.previous?.marriages ?? [];
  const fresh = now.length > before.length ? now.at(-1) : null;
  if (!fresh) return null;
  return h("p", { class: "marriage-news", role: "status", "data-marriage": fresh.suit }, `${seatName(ctx.names, fresh.seat)} announces a marriage in ${trumpText(fresh.suit)}: +${fresh.value}`);
}

function middle(view: View, ctx: Ctx): HTMLElement {
  const where = places(view);
  const trick: View[] = view.trick ?? [];
  const cells = trick.map((p) =>
    h("div", { class: `played at-${where[p.seat]}`, "data-card": p.card, "aria-label": `${seatName(ctx.names, p.seat)} played the ${cardName(p.card)}` }, cardSvg(p.card), h("span", { class: "by" }, seatName(ctx.names, p.seat))),
  );
  const last = (view.tricks ?? []).at(-1);
  const talon = view.talon
    ? h("div", { class: "talon shown", "aria-label": `talon: ${view.talon.map(cardName).join(", ")}` }, h("span", {}, "Talon"), view.talon.map((c: string) => cardSvg(c, "small")))
    : view.phase === "bidding"
      ? h("div", { class: "talon", "aria-label": "talon, face down" }, h("span", {}, "Talon"), [cardBack("small"), cardBack("small"), cardBack("small")])
      : null;
  const contract =
    view.declarer !== null && view.declarer !== undefined
      ? `${seatName(ctx.names, view.declarer)} ${view.trump ? `plays ${view.target} in ${trumpText(view.trump)}` : `won the bidding at ${view.bid}`}${view.blind ? " (blind: doubled)" : ""}`
      : view.phase === "bidding"
        ? `Bidding${view.calls?.length ? `: ${view.calls.filter((c: View) => !c.pass).at(-1)?.bid ?? "no bid yet"}` : ""}`
        : "";
  return h(
    "div",
    { class: "felt five-felt" },
    h("div", { class: "felt-head" }, h("span", { class: "contract" }, contract), (view.marriages ?? []).length ? h("span", { class: "marriages" }, "Marriages: ", view.marriages.map((m: View) => `${seatName(ctx.names, m.seat)} ${SUIT_SIGNS[m.suit] ?? m.suit} +${m.value}`).join(" · ")) : null),
    marriageNews(view, ctx),
    h("div", { class: "trick", role: "group", "aria-label": "the trick on the table" }, cells.length ? cells : h("p", { class: "empty" }, view.phase === "tricks" ? `${seatName(ctx.names, view.turn)} leads` : "")),
    talon,
    last ? h("p", { class: "last-trick" }, `Last trick to ${seatName(ctx.names, last.winner)}: `, last.cards.map((c: string) => cardSvg(c, "tiny"))) : null,
  );
}

function declaring(view: View): View | undefined {
  return (view.legal ?? []).find((a: Act) => a.do === "declare");
}

function hand(view: View, ctx: Ctx): HTMLElement | null {
  if (!ctx.showHand) return null;
  if (!view.hand) {
    return view.seat !== null && view.phase === "bidding"
      ? h("div", { class: "hand blind" }, [...Array(view.hand_sizes[view.seat]).keys()].map(() => cardBack()), h("p", {}, "Your cards are face down: bid blind for a double result, or look at them."))
      : null;
  }
  const plays: Act[] = (view.legal ?? []).filter((a: Act) => a.do === "play");
  const rule = declaring(view);
  const d = ctx.ui.declare;
  const giving = rule && d.step >= 2;
  const recipients: number[] = rule ? rule.give.to : [];
  const cards = sortCards(view.hand).map((c, i, all) => {
    const mine = plays.filter((a) => a.card === c);
    const givenTo = Object.entries(d.give).find(([, card]) => card === c)?.[0];
    const playable = mine.length > 0;
    const active = playable || !!giving;
    const tap = () => {
      if (giving) {
        if (givenTo !== undefined) delete d.give[givenTo];
        else {
          const next = recipients.find((s) => d.give[s] === undefined);
          if (next !== undefined) d.give[next] = c;
        }
        ctx.redraw();
      } else if (mine.length > 1) {
        ctx.ui.marriageFor = c; // the lead may announce a marriage: ask
        ctx.redraw();
      } else if (mine.length === 1) ctx.send?.(mine[0]);
    };
    const label = `${cardName(c)}${playable ? ", playable" : plays.length ? ", may not be played now" : ""}${givenTo !== undefined ? `, to give to ${seatName(ctx.names, Number(givenTo))}` : ""}`;
    return h(
      "button",
      {
        class: `hand-card ${plays.length ? (playable ? "legal" : "illegal") : ""} ${givenTo !== undefined ? "given" : ""} ${i > 0 && all[i - 1][1] !== c[1] ? "suit-break" : ""}`.trim(),
        "data-card": c,
        "data-key": `card-${c}`,
        "aria-label": label,
        disabled: !active || ctx.send === null,
        onclick: tap,
        onkeydown: (event: KeyboardEvent) => walk(event),
      },
      cardSvg(c),
      givenTo !== undefined ? h("span", { class: "give-tag" }, `→ ${seatName(ctx.names, Number(givenTo))}`) : null,
    );
  });
  return h("div", { class: "hand cards", role: "group", "aria-label": "Your cards" }, cards);
}

function walk(event: KeyboardEvent): void {
  if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
  event.preventDefault();
  const all = [...document.querySelectorAll<HTMLButtonElement>(".hand .hand-card:not([disabled])")];
  const at = all.indexOf(event.currentTarget as HTMLButtonElement);
  all[(at + (event.key === "ArrowRight" ? 1 : -1) + all.length) % all.length]?.focus();
}

function declareSteps(view: View, ctx: Ctx, rule: View): { text: string; controls: HTMLElement[] } {
  const d = ctx.ui.declare;
  const send = ctx.send;
  const back = h("button", { class: "step-back", "data-key": "declare-back", onclick: () => { d.step = Math.max(0, d.step - 1); if (d.step < 2) d.give = {}; ctx.redraw(); } }, "Back");
  const abandon = actionButton(send, { do: "abandon" }, `Abandon (${view.blind ? "+2×" : "+"}${view.bid} to you, −25 to each other)`);
  if (d.step === 0) {
    const trumps = (rule.trump as string[]).map((t) =>
      h("button", { class: `action trump suit-${t}`, "data-trump": t, "data-key": `trump-${t}`, onclick: () => { d.trump = t; d.target = rule.target.min; d.step = 1; ctx.redraw(); } }, trumpText(t)),
    );
    return { text: "You won the bidding and took the talon. 1 of 3: choose trumps.", controls: [...trumps, abandon] };
  }
  if (d.step === 1) {
    const target = h("input", { type: "number", name: "target", min: rule.target.min, max: rule.target.max, step: 1, value: d.target ?? rule.target.min, "aria-label": "target", "data-key": "target" });
    target.addEventListener("change", () => (d.target = Number(target.value)));
    const nudge = (by: number) => h("button", { class: "nudge", "data-key": `target${by}`, "aria-label": `${by > 0 ? "raise" : "lower"} the target by ${Math.abs(by)}`, onclick: () => { d.target = Math.min(rule.target.max, Math.max(rule.target.min, Number(target.value) + by)); ctx.redraw(); } }, by > 0 ? `+${by}` : `${by}`);
    const next = h("button", { class: "action primary", "data-key": "target-next", "data-step": "target", onclick: () => { d.target = Number(target.value); d.step = 2; ctx.redraw(); } }, "Next: give cards");
    return { text: `2 of 3: your target in ${trumpText(d.trump ?? "")} (at least your bid, ${rule.target.min}).`, controls: [nudge(-5), target, nudge(5), next, back] };
  }
  const to: number[] = rule.give.to;
  const missing = to.find((s) => d.give[s] === undefined);
  const give = Object.fromEntries(to.filter((s) => d.give[s] !== undefined).map((s) => [String(s), d.give[s]]));
  const done = missing === undefined;
  const summary = to.map((s) => `${d.give[s] ? cardText(d.give[s]) : "?"} to ${seatName(ctx.names, s)}`).join(", ");
  const declare = h(
    "button",
    { class: "action primary", "data-do": "declare", "data-key": "do-declare", disabled: !done || send === null, onclick: () => { const action = { do: "declare", trump: d.trump, target: d.target, give }; ctx.ui.declare = { trump: null, target: null, give: {}, step: 0 }; send?.(action); } },
    `Declare ${d.target} in ${trumpText(d.trump ?? "")}, give ${summary}`,
  );
  const text = done ? "3 of 3: check and declare." : `3 of 3: tap the card you give ${seatName(ctx.names, missing)} (face down).`;
  return { text, controls: [declare, back] };
}

function prompt(view: View, ctx: Ctx): { text: string; mine: boolean; controls: HTMLElement[] } {
  const legal: Act[] = view.legal ?? [];
  const send = ctx.send;
  const controls: HTMLElement[] = [];
  const name = (s: number | null) => seatName(ctx.names, s);
  if (!legal.length) {
    const text = view.phase === "over" || view.turn === null || view.turn === undefined ? "" : view.seat === null ? `${name(view.turn)} to act` : view.seat === view.sitting_out ? `You deal and sit this hand out; ${name(view.turn)} to act.` : `${name(view.turn)} is thinking…`;
    return { text, mine: false, controls };
  }
  const rule = declaring(view);
  if (rule) {
    const steps = declareSteps(view, ctx, rule);
    return { text: steps.text, mine: true, controls: steps.controls };
  }
  const bid = legal.find((a) => a.do === "bid");
  if (bid) {
    const amount = h("input", { type: "number", name: "amount", min: bid.amount.min, max: bid.amount.max, value: bid.amount.min, "aria-label": "bid amount", "data-key": "amount" });
    const nudge = (by: number) => h("button", { class: "nudge", "aria-label": `${by > 0 ? "raise" : "lower"} the bid by ${Math.abs(by)}`, "data-key": `amount${by}`, onclick: () => (amount.value = String(Math.min(bid.amount.max, Math.max(bid.amount.min, Number(amount.value) + by)))) }, by > 0 ? `+${by}` : `${by}`);
    controls.push(nudge(-5), amount, nudge(5), h("button", { class: "action primary", "data-do": "bid", "data-key": "do-bid", disabled: send === null, onclick: () => send?.({ do: "bid", amount: Number(amount.value) }) }, "Bid"));
  }
  if (legal.some((a) => a.do === "pass")) controls.push(actionButton(send, { do: "pass" }, "Pass"));
  if (legal.some((a) => a.do === "look")) controls.push(actionButton(send, { do: "look" }, "Look at my cards"));
  const marriage = ctx.ui.marriageFor;
  const plays = legal.filter((a) => a.do === "play");
  if (marriage && plays.some((a) => a.card === marriage)) {
    for (const a of plays.filter((p) => p.card === marriage)) {
      controls.push(actionButton(send, a, a.marriage ? `Lead ${cardText(marriage)} and announce the marriage` : `Lead ${cardText(marriage)} without announcing`, a.marriage ? "primary marriage" : ""));
    }
  }
  let text = "";
  if (bid) text = `Your bid: at least ${bid.amount.min}${view.hand === null ? ", blind (doubled) unless you look" : ""}, or pass.`;
  else if (plays.length) text = marriage ? `Announce the marriage with ${cardText(marriage)}?` : (view.trick ?? []).length ? "Your turn: tap a raised card." : "Your lead: tap a raised card.";
  return { text, mine: true, controls };
}

function handSummary(view: View, ctx: Ctx): HTMLElement | null {
  const hands: View[] = view.hands ?? [];
  const over = view.phase === "over";
  if (!over && hands.length <= ctx.ui.seenHands) return null;
  const r = hands.at(-1);
  const name = (s: number | null) => seatName(ctx.names, s);
  const rows = r
    ? (view.scores as number[]).map((score, s) => {
        const delta: number = r.deltas[s];
        const role = s === r.declarer ? (r.abandoned ? "abandoned" : r.made ? "made it" : "fell short") : s === r.dealer && (view.scores as number[]).length === 4 ? "sat out" : "defended";
        return h(
          "tr",
          { "data-hand-seat": s },
          h("td", {}, name(s)),
          h("td", {}, r.declarer === null ? "—" : role),
          h("td", { "data-took": r.points[s] }, r.points[s]),
          h("td", { "data-delta": delta, class: delta < 0 ? "down" : delta > 0 ? "up" : "" }, delta > 0 ? `+${delta}` : delta < 0 ? `−${-delta}` : "0"),
          h("td", { "data-after": score }, score),
        );
      })
    : [];
  const what = !r
    ? ""
    : r.declarer === null
      ? "Everyone passed: nothing scored."
      : r.abandoned
        ? `${name(r.declarer)} abandoned at ${r.bid}${r.blind ? " (blind)" : ""}.`
        : `${name(r.declarer)} played ${r.target} in ${trumpText(r.trump)}${r.blind ? " (blind: doubled)" : ""}: ${r.made ? "made" : "fell short"}.`;
  const ok = h("button", { class: "action primary", "data-key": "summary-ok", "data-dismiss": "hand", onclick: () => { ctx.ui.seenHands = hands.length; ctx.redraw(); } }, "OK");
  return h(
    "section",
    { class: `summary ${over ? "final" : ""}`.trim(), "data-summary-hand": hands.length, "aria-live": "polite" },
    over ? h("h2", { class: "result", "data-result": view.status }, fiveResult(view, ctx.names)) : h("h2", {}, `Hand ${hands.length} is over`),
    r ? h("p", { "data-fact": r.declarer === null ? "passed" : r.abandoned ? "abandoned" : r.made ? "made" : "failed" }, what) : null,
    rows.length ? h("table", {}, h("thead", {}, h("tr", {}, h("th", {}, "Player"), h("th", {}, ""), h("th", {}, "Took"), h("th", {}, "Change"), h("th", {}, "Score"))), h("tbody", {}, rows)) : null,
    over ? null : ok,
  );
}

export function fiveResult(view: View, names: string[]): string {
  if (view.status === "voided") return `Game voided (${view.void_reason}).`;
  const winners = (view.winners as number[]).map((s) => seatName(names, s)).join(" and ");
  const scores = (view.scores as number[]).map((score, s) => `${seatName(names, s)} ${score}`).join(", ");
  return `${winners} win${view.winners.length === 1 ? "s" : ""} — ${scores}`;
}

function pastHands(view: View, ctx: Ctx): HTMLElement | null {
  const hands: View[] = view.hands ?? [];
  if (!hands.length) return null;
  const name = (s: number | null) => seatName(ctx.names, s);
  return h(
    "details",
    { class: "rounds" },
    h("summary", {}, `Hands so far (${hands.length})`),
    h(
      "ol",
      {},
      hands.map((r) =>
        h("li", {}, r.declarer === null ? "all passed" : `${name(r.declarer)} ${r.abandoned ? `abandoned ${r.bid}` : `${r.target} ${SUIT_SIGNS[r.trump] ?? "NT"} ${r.made ? "made" : "failed"}`}: `, (r.deltas as number[]).map((d, s) => `${name(s)} ${d > 0 ? "+" : ""}${d}`).join(", ")),
      ),
    ),
  );
}

export function renderFive(view: View, ctx: Ctx): HTMLElement {
  if (!declaring(view)) ctx.ui.declare = { trump: null, target: null, give: {}, step: 0 };
  if (ctx.ui.marriageFor && !(view.legal ?? []).some((a: Act) => a.do === "play" && a.card === ctx.ui.marriageFor)) ctx.ui.marriageFor = null;
  const where = places(view);
  const seats = Object.keys(where).map(Number);
  const others = seats.filter((s) => where[s] !== "bottom").sort((a, b) => ["left", "top", "right"].indexOf(where[a]) - ["left", "top", "right"].indexOf(where[b]));
  const me = seats.find((s) => where[s] === "bottom")!;
  const p = prompt(view, ctx);
  return h(
    "section",
    { class: "game five", "data-phase": view.phase },
    h("div", { class: "opponents" }, others.map((s) => seatBox(view, s, where[s], ctx))),
    handSummary(view, ctx),
    middle(view, ctx),
    pastHands(view, ctx),
    h(
      "div",
      { class: "bottom-bar" },
      seatBox(view, me, "bottom", ctx),
      hand(view, ctx),
      ctx.showHand && view.phase !== "over" ? dock(p.text, p.mine, p.controls, undefined, ctx.send) : null,
    ),
  );
}
