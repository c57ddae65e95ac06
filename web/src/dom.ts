// A few lines instead of a framework: build elements, and the controls every action uses.
import type { Act } from "./api";

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

/** A button for one action. `data-do` and `data-action` let people and tests find it. */
export function actionButton(send: Send, action: Act, label: Child | Child[], extra = ""): HTMLButtonElement {
  return h(
    "button",
    {
      class: `action ${extra}`.trim(),
      "data-do": action.do,
      "data-action": JSON.stringify(action),
      disabled: send === null,
      onclick: () => send?.(action),
    },
    label,
  );
}

/** A choice of amounts with one button (bids and raises), the least one selected. */
export function amountPicker(send: Send, kind: string, amounts: number[], label: string): HTMLElement {
  const select = h("select", { "data-amounts": kind }, ...amounts.map((a) => h("option", { value: a }, a)));
  const button = h(
    "button",
    { class: "action", "data-do": kind, disabled: send === null, onclick: () => send?.({ do: kind, amount: Number(select.value) }) },
    label,
  );
  return h("span", { class: "picker" }, select, button);
}

/** The seat's move: the game's controls, and resign apart from them where it is allowed. */
export function movePanel(send: Send, legal: Act[], controls: HTMLElement[]): HTMLElement {
  const resign = legal.find((a) => a.do === "resign");
  return h(
    "div",
    { class: "actions" },
    h("h3", {}, "Your move"),
    h("div", { class: "controls" }, controls),
    resign ? actionButton(send, resign, "Resign", "resign") : null,
  );
}

export function seatName(names: string[], seat: number | null | undefined): string {
  if (seat === null || seat === undefined) return "nobody";
  return names[seat] ?? `Seat ${seat}`;
}
