// A few lines instead of a framework: build elements, the controls every action uses, and what a game's
// screen is drawn with (Ctx).
import type { Act, View } from "./api";

type Child = Node | string | number | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, unknown> = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value as EventListener);
    else if (key === "class") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** Sends one action of the seat on screen; null where the viewer may not act (a spectator). */
export type Send = ((action: Act) => void) | null;

/** What the page remembers between two views of one table: nothing the service decides, only what the
 * player has picked (a Tile, a declaration in progress) and what the screen has shown. */
export interface Ui {
  selected: string | null; // Spectacular Bid: the Tile picked from the hand
  previous: View | null; // the view drawn before this one (the newest tile, a marriage just announced)
  roundStart: Record<number, number[]>; // Spectacular Bid: the points seen as each round was dealt
  declare: { trump: string | null; target: number | null; give: Record<string, string>; step: number };
  marriageFor: string | null; // 501♠: the card whose play may announce a marriage (asks which)
  seenHands: number; // 501♠: hand summaries dismissed
}

export function newUi(): Ui {
  return { selected: null, previous: null, roundStart: {}, declare: { trump: null, target: null, give: {}, step: 0 }, marriageFor: null, seenHands: 0 };
}

export interface Ctx {
  names: string[];
  send: Send;
  showHand: boolean;
  ui: Ui;
  redraw: () => void;
  width: number; // the table's width in px (the layout bends to stay inside it)
}

/** A button for one action. `data-do` and `data-action` let people and tests find it. */
export function actionButton(send: Send, action: Act, label: Child | Child[], extra = ""): HTMLButtonElement {
  return h(
    "button",
    {
      class: `action ${extra}`.trim(),
      "data-do": action.do,
      "data-action": JSON.stringify(action),
      "data-key": `do-${action.do}-${action.amount ?? ""}`,
      disabled: send === null,
      onclick: () => send?.(action),
    },
    label,
  );
}

/** A choice of amounts with one button (bids and raises), the least one selected. */
export function amountPicker(send: Send, kind: string, amounts: number[], label: string): HTMLElement {
  const select = h("select", { "data-amounts": kind, "aria-label": `${label} amount` }, ...amounts.map((a) => h("option", { value: a }, a)));
  const button = h(
    "button",
    { class: "action", "data-do": kind, "data-key": `do-${kind}`, disabled: send === null, onclick: () => send?.({ do: kind, amount: Number(select.value) }) },
    label,
  );
  return h("span", { class: "picker" }, select, button);
}

/** The dock at the bottom of the screen: what is asked of this seat now (or who is to move), the controls,
 * and resign apart from them where the game has it. */
export function dock(prompt: string, mine: boolean, controls: HTMLElement[], resign: Act | undefined, send: Send): HTMLElement {
  return h(
    "div",
    { class: `dock ${mine ? "mine" : ""}`.trim(), role: "region", "aria-label": "Your controls", "aria-live": "polite" },
    h("p", { class: "prompt" }, prompt),
    controls.length ? h("div", { class: "controls" }, controls) : null,
    resign ? actionButton(send, resign, "Resign", "resign") : null,
  );
}

export function seatName(names: string[], seat: number | null | undefined): string {
  if (seat === null || seat === undefined) return "nobody";
  return names[seat] ?? `Player ${seat + 1}`;
}
