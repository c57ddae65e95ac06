// Spectacular Bid at the table: both players with their points and clocks, the Layout as it lies (layout.ts),
// your Tiles to tap (legal ones raised, the rest dimmed), the ends a picked Tile fits glowing with the count
// it would make, the lead auction, the round's summary while the clocks are stopped, and the result.
// Everything shown comes from the seat's view JSON (workers/games/spectacular_bid/view.py): the page
// never applies a rule of its own, legality is the view's `legal` list and each count its `counts`.
import type { Act, View } from "./api";
import { beep, clockText, decisionLeft, sbClocks } from "./clock";
import { actionButton, amountPicker, dock, h, seatName, type Ctx } from "./dom";
import { drawLayout, type Target } from "./layout";
import { pips, plural, sameTile, tileSvg } from "./pieces";

const ENDS: Record<string, string> = { W: "west", E: "east", N: "north", S: "south" };

/** Both clocks as they read now (called every tick, and on every view): the bank, and apart from it the
 * running decision's delay. */
export function paintClocks(root: ParentNode, view: View, now: number | null): void {
  if (view.game !== "spectacular-bid") return;
  const left = decisionLeft(view, now);
  sbClocks(view, now).forEach((c, seat) => {
    const el = root.querySelector<HTMLElement>(`[data-clock="${seat}"]`);
    if (!el) return;
    el.textContent = clockText(c.bankMs);
    el.classList.toggle("running", c.running);
    const low = c.bankMs < 10_000 && (c.delayMs ?? 0) === 0;
    el.classList.toggle("low", low);
    el.setAttribute("aria-label", `${clockText(c.bankMs)} left in the bank${c.running ? ", running" : ""}`);
    const delay = root.querySelector<HTMLElement>(`[data-delay="${seat}"]`);
    if (delay) {
      delay.hidden = c.delayMs === null || c.delayMs <= 0;
      delay.textContent = c.delayMs ? `+${Math.ceil(c.delayMs / 1000)}` : "";
    }
    if (left !== null && left.seat === seat) el.dataset.leftMs = String(Math.round(left.ms)); // delay + bank
    else delete el.dataset.leftMs;
    if (low && c.running && seat === view.seat) beep(c.bankMs);
  });
}

function player(view: View, seat: number, ctx: Ctx): HTMLElement {
  const me = view.seat === seat;
  const badges = [view.jockey === seat ? h("span", { class: "badge", title: "went out last round: leads the auction, 15 off" }, "jockey") : null];
  return h(
    "div",
    { class: `player ${me ? "me" : ""} ${view.turn === seat && view.phase !== "over" ? "to-move" : ""}`.trim(), "data-seat": seat },
    h("span", { class: "name" }, seatName(ctx.names, seat), me ? " (you)" : "", ...badges),
    h("span", { class: "points", title: "points" }, h("b", { "data-points": seat }, view.points[seat]), " pts"),
    h("span", { class: "hand-size" }, plural(view.hand_sizes[seat], "tile")),
    h("span", { class: "clocks" }, h("span", { class: "delay", "data-delay": seat, hidden: true, title: "delay before the bank runs" }), h("span", { class: "clock", "data-clock": seat, role: "timer" })),
  );
}

function plays(view: View): { a: Act; count: number | null }[] {
  const counts: (number | null)[] = view.counts ?? [];
  return (view.legal ?? []).map((a: Act, i: number) => ({ a, count: counts[i] ?? null })).filter((p: { a: Act }) => p.a.do === "play");
}

function targets(view: View, ctx: Ctx): Target[] {
  const picked = ctx.ui.selected;
  if (!picked || !ctx.send) return [];
  const out: Target[] = [];
  for (const { a, count } of plays(view)) {
    if (!sameTile(a.tile, picked)) continue;
    const end: string | null = a.end ?? null;
    if (out.some((t) => t.end === end)) continue; // a lead may be listed both ways round: the first is enough
    const scores = count !== null && count > 0 && count % 5 === 0 ? `, scores ${count}` : "";
    const label = end === null ? `Lead ${a.tile}: count ${count}${scores}` : `Play ${a.tile} on the ${ENDS[end]} end: count ${count}${scores}`;
    out.push({ end, count, label, play: () => { ctx.ui.selected = null; ctx.send?.(a); } });
  }
  return out;
}

/** Which end the newest tile went to, from the view drawn before this one (nothing on a fresh page). */
function newest(view: View, previous: View | null): string | null {
  const layout = view.layout;
  if (!layout.lead || !previous || previous.round !== view.round) return null;
  const before = previous.layout;
  if (!before.lead) return "lead";
  for (const end of ["W", "E", "N", "S"]) if ((layout.lines[end] ?? []).length > (before.lines[end] ?? []).length) return end;
  return null;
}

function table(view: View, ctx: Ctx): HTMLElement {
  const bound = Math.max(5, Math.min(11, Math.floor(ctx.width / 24 / 2) - 1));
  const layout = view.layout;
  const count: number = layout.count;
  const scored = count > 0 && count % 5 === 0 && newest(view, ctx.ui.previous) !== null;
  return h(
    "div",
    { class: "felt", "data-count": count },
    h(
      "div",
      { class: "felt-head" },
      h("span", {}, `Round ${view.round}`),
      h("span", { class: "count", title: "the open ends add up to" }, "Count ", h("b", { "data-count": count }, count), scored ? h("span", { class: "scored" }, ` +${count}`) : ""),
      h("span", {}, `Boneyard ${view.boneyard_size}`),
    ),
    h("div", { class: "layout-box" }, layout.lead || targets(view, ctx).length ? drawLayout(layout, bound, newest(view, ctx.ui.previous), targets(view, ctx)) : h("p", { class: "empty" }, "The layout is empty: the lead opens it.")),
  );
}

function hand(view: View, ctx: Ctx): HTMLElement | null {
  const tiles: string[] | null = ctx.showHand ? view.hand : null;
  if (!tiles) return null;
  const legal = plays(view);
  const myTurn = legal.length > 0;
  const pick = (t: string) => {
    ctx.ui.selected = ctx.ui.selected === t ? null : t;
    ctx.redraw();
    if (ctx.ui.selected) requestAnimationFrame(() => document.querySelector<SVGElement>(".end-marker.target")?.focus());
  };
  const buttons = tiles.map((t) => {
    const fits = legal.some((p) => sameTile(p.a.tile, t));
    const [a, b] = pips(t);
    const selected = ctx.ui.selected !== null && sameTile(ctx.ui.selected, t);
    return h(
      "button",
      {
        class: `hand-tile ${myTurn ? (fits ? "legal" : "illegal") : ""} ${selected ? "selected" : ""}`.trim(),
        "data-tile": t,
        "data-key": `tile-${t}`,
        "aria-pressed": selected ? "true" : "false",
        "aria-label": `tile ${a}-${b}${myTurn ? (fits ? ", playable" : ", does not fit") : ""}`,
        disabled: !fits || ctx.send === null,
        onclick: () => pick(t),
        onkeydown: arrows,
      },
      tileSvg(a, b, true),
    );
  });
  return h("div", { class: "hand", role: "group", "aria-label": "Your tiles" }, buttons);
}

/** Left and right arrows walk the playable tiles of the hand. */
function arrows(event: KeyboardEvent): void {
  if (event.key !== "ArrowRight" && event.key !== "ArrowLeft") return;
  event.preventDefault();
  const all = [...document.querySelectorAll<HTMLButtonElement>(".hand .hand-tile:not([disabled])")];
  const at = all.indexOf(event.currentTarget as HTMLButtonElement);
  all[(at + (event.key === "ArrowRight" ? 1 : -1) + all.length) % all.length]?.focus();
}

function prompt(view: View, ctx: Ctx): { text: string; mine: boolean; controls: HTMLElement[] } {
  const legal: Act[] = view.legal ?? [];
  const send = ctx.send;
  const name = (s: number | null) => seatName(ctx.names, s);
  const controls: HTMLElement[] = [];
  if (view.phase === "over") return { text: "", mine: false, controls };
  const mine = legal.some((a) => a.do !== "resign");
  if (legal.some((a) => a.do === "ready")) controls.push(actionButton(send, { do: "ready" }, "Continue", "primary"));
  if (legal.some((a) => a.do === "reveal")) controls.push(actionButton(send, { do: "reveal" }, "Show my tiles", "primary"));
  if (legal.some((a) => a.do === "draw")) controls.push(actionButton(send, { do: "draw" }, `Draw a tile (${view.boneyard_size} left)`, "primary"));
  for (const kind of ["bid", "raise"]) {
    const amounts = legal.filter((a) => a.do === kind).map((a) => Number(a.amount));
    if (amounts.length) controls.push(amountPicker(send, kind, amounts, kind === "bid" ? "Bid" : "Raise"));
  }
  const accept = legal.find((a) => a.do === "accept");
  if (accept) controls.push(actionButton(send, accept, `Accept ${view.auction?.bid ?? ""}`.trim()));
  if (legal.some((a) => a.do === "decline")) controls.push(actionButton(send, { do: "decline" }, `Decline: ${name(view.jockey)} leads free`));
  let text: string;
  if (view.phase === "ready") {
    const waiting = (view.ready as number[]).includes(view.seat ?? -1);
    text = waiting ? "Waiting for the other player to continue; the clocks are stopped." : "The clocks are stopped until both players continue.";
  } else if (view.hand_over) text = `The clock waits until ${name(view.turn)} shows their tiles.`;
  else if (!mine) text = view.turn === null ? "" : view.seat === null ? `${name(view.turn)} to move` : `${name(view.turn)} is thinking…`;
  else if (view.phase === "auction") {
    const bid = view.auction;
    text = bid ? `Lead auction: ${name(bid.bidder)} bids ${bid.bid}. Accept, or raise by 5 or more.` : `Lead auction: bid for the lead, or decline and ${name(view.jockey)} leads free.`;
  } else if (legal.some((a) => a.do === "draw")) text = "Nothing fits: draw from the boneyard.";
  else if (view.phase === "lead") text = ctx.ui.selected ? "Tap the middle of the table to lead it." : "Your lead: tap a tile.";
  else text = ctx.ui.selected ? "Tap a glowing end (its new count shows)." : "Your turn: tap a tile, then an end.";
  return { text, mine, controls };
}

function roundLines(r: View, ctx: Ctx): HTMLElement[] {
  const name = (s: number | null) => seatName(ctx.names, s);
  const lines: HTMLElement[] = [];
  if (r.end === "domino") lines.push(h("li", { "data-fact": "domino" }, `${name(r.domino_by)} went out (domino) and is the jockey next round.`));
  else if (r.end === "block" && r.block) {
    const b = r.block;
    const sums = `${name(0)}'s tiles add up to ${b.sums[0]}, ${name(1)}'s to ${b.sums[1]}`;
    const paid = b.to === null ? "equal totals: nothing is paid" : b.short ? `${name(b.to)} is owed ${b.owed} and takes all ${name(1 - b.to)} had left` : `${name(b.to)} receives ${b.owed} from ${name(1 - b.to)}`;
    lines.push(h("li", { "data-fact": "block", "data-sums": b.sums.join(","), "data-owed": b.owed, "data-to": b.to ?? "" }, `Blocked: ${sums}; ${paid}.`));
  } else if (r.end) lines.push(h("li", { "data-fact": r.end }, { points: "A balance ran out.", time: "A clock ran out.", resign: "A player resigned." }[r.end as string] ?? r.end));
  const a = r.auction;
  if (a === "declined") lines.push(h("li", { "data-fact": "auction" }, `Lead auction declined: ${name(r.jockey)} led free.`));
  else if (a) {
    const discount = a.paid < a.bid ? ` (${a.bid} less the jockey's 15)` : "";
    lines.push(h("li", { "data-fact": "auction", "data-paid": a.paid, "data-bid": a.bid }, `${name(a.winner)} bought the lead for ${a.bid}: paid ${a.paid}${discount} to ${name(1 - a.winner)}.`));
  } else if (r.lead_by !== null) lines.push(h("li", { "data-fact": "lead" }, `${name(r.lead_by)} had the forced lead.`));
  return lines;
}

const REASONS: Record<string, string> = { points: "on points", time: "on time", resign: "by resignation" };

export function sbResult(view: View, names: string[]): string {
  if (view.status === "voided") return `Match voided (${view.void_reason}): no result, no rating change.`;
  return `${seatName(names, view.winner)} wins ${REASONS[view.reason] ?? view.reason} — ${names.map((_, s) => `${seatName(names, s)} ${view.points[s]}`).join(", ")}`;
}

/** Held on screen while the clocks are stopped: the round that just ended, or the match's result. */
function summary(view: View, ctx: Ctx): HTMLElement | null {
  const over = view.phase === "over";
  const rounds: View[] = view.past_rounds ?? [];
  const r: View | null = over ? view.final_round : view.phase === "ready" && rounds.length ? rounds[rounds.length - 1] : null;
  if (!r && !over) return null;
  const number = over ? view.round : rounds.length;
  const start = ctx.ui.roundStart[number];
  const points = (view.points as number[]).map((p, s) =>
    h("li", { "data-fact": "balance", "data-seat": s, "data-after": p }, `${seatName(ctx.names, s)}: ${start ? `${start[s]} → ` : ""}${p}`),
  );
  const ready = (view.legal ?? []).some((a: Act) => a.do === "ready");
  return h(
    "section",
    { class: `summary ${over ? "final" : ""}`.trim(), "data-summary-round": number, "aria-live": "polite" },
    over ? h("h2", { class: "result", "data-result": view.status }, sbResult(view, ctx.names)) : h("h2", {}, `Round ${number} is over`),
    r ? h("ul", {}, roundLines(r, ctx)) : null,
    h("ul", { class: "points-list" }, points),
    ready ? h("p", { class: "next" }, `Round ${view.round} is dealt: continue below when you are ready.`) : null,
  );
}

function pastRounds(view: View, ctx: Ctx): HTMLElement | null {
  const rounds: View[] = [...(view.past_rounds ?? []), ...(view.final_round ? [view.final_round] : [])];
  if (!rounds.length) return null;
  return h(
    "details",
    { class: "rounds" },
    h("summary", {}, `Rounds so far (${rounds.length})`),
    h("ol", {}, rounds.map((r) => h("li", {}, h("ul", {}, roundLines(r, ctx))))),
  );
}

/** The whole table for one seat's view (`showHand` false on a shared device's public screens). */
export function renderSB(view: View, ctx: Ctx): HTMLElement {
  if (view.phase === "ready" && ctx.ui.roundStart[view.round] === undefined) ctx.ui.roundStart[view.round] = [...view.points];
  if (ctx.ui.selected && !(view.hand ?? []).some((t: string) => sameTile(t, ctx.ui.selected!))) ctx.ui.selected = null;
  if (ctx.ui.selected && !plays(view).length) ctx.ui.selected = null;
  const me: number = view.seat ?? 0;
  const other = 1 - me;
  const p = prompt(view, ctx);
  const resign = ctx.showHand ? (view.legal ?? []).find((a: Act) => a.do === "resign") : undefined;
  return h(
    "section",
    { class: "game sb", "data-phase": view.phase, "data-arms": ["W", "E", "N", "S"].filter((e) => (view.layout.lines?.[e] ?? []).length).length },
    player(view, other, ctx),
    summary(view, ctx),
    table(view, ctx),
    pastRounds(view, ctx),
    h(
      "div",
      { class: "bottom-bar" },
      player(view, me, ctx),
      hand(view, ctx),
      ctx.showHand && view.phase !== "over" ? dock(p.text, p.mine, p.controls, resign, ctx.send) : null,
    ),
  );
}
