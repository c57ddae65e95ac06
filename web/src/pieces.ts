// The pieces as drawn things: a domino Tile with its pips, a playing card's face (SVG). Nothing here knows
// a rule; the games' modules decide what is legal from the view and only ask for pictures.
const SVG = "http://www.w3.org/2000/svg";

export function s<K extends keyof SVGElementTagNameMap>(tag: K, attrs: Record<string, string | number> = {}, ...children: (SVGElement | string)[]): SVGElementTagNameMap[K] {
  const el = document.createElementNS(SVG, tag);
  for (const [key, value] of Object.entries(attrs)) el.setAttribute(key, String(value));
  for (const child of children) el.append(child);
  return el;
}

/** Pip centres in a unit square, for 0 … 6. */
const PIPS: Record<number, [number, number][]> = {
  0: [],
  1: [[0.5, 0.5]],
  2: [[0.27, 0.27], [0.73, 0.73]],
  3: [[0.27, 0.27], [0.5, 0.5], [0.73, 0.73]],
  4: [[0.27, 0.27], [0.73, 0.27], [0.27, 0.73], [0.73, 0.73]],
  5: [[0.27, 0.27], [0.73, 0.27], [0.5, 0.5], [0.27, 0.73], [0.73, 0.73]],
  6: [[0.27, 0.25], [0.73, 0.25], [0.27, 0.5], [0.73, 0.5], [0.27, 0.75], [0.73, 0.75]],
};

/** A domino in the box (x, y, w, h): wider than tall puts `a` left and `b` right, else `a` on top. */
export function tileGroup(a: number, b: number, x: number, y: number, w: number, h: number, extra = ""): SVGGElement {
  const g = s("g", { class: `tile-face ${extra}`.trim() });
  const pad = Math.min(w, h) * 0.04;
  g.append(s("rect", { x: x + pad, y: y + pad, width: w - 2 * pad, height: h - 2 * pad, rx: Math.min(w, h) * 0.14, class: "bone" }));
  const across = w >= h;
  const side = across ? w / 2 : h / 2;
  const halves: [number, number, number][] = across ? [[a, x, y], [b, x + side, y]] : [[a, x, y], [b, x, y + side]];
  const cell = across ? h : w;
  g.append(
    across
      ? s("line", { x1: x + side, y1: y + cell * 0.15, x2: x + side, y2: y + cell * 0.85, class: "divider" })
      : s("line", { x1: x + cell * 0.15, y1: y + side, x2: x + cell * 0.85, y2: y + side, class: "divider" }),
  );
  for (const [pips, hx, hy] of halves) {
    // a six on a tile lying across shows its two rows of three along the tile
    for (const [px, py] of PIPS[pips] ?? []) {
      const [u, v] = across && pips === 6 ? [py, px] : [px, py];
      g.append(s("circle", { cx: hx + u * cell, cy: hy + v * cell, r: cell * 0.085, class: "pip" }));
    }
  }
  return g;
}

/** A Tile on its own (the hand, the summaries): an SVG two squares long. */
export function tileSvg(a: number, b: number, vertical = false, extra = ""): SVGSVGElement {
  const [w, h] = vertical ? [1, 2] : [2, 1];
  const svg = s("svg", { viewBox: `0 0 ${w} ${h}`, class: `tile ${vertical ? "vertical" : ""} ${extra}`.trim(), "aria-hidden": "true" });
  svg.append(tileGroup(a, b, 0, 0, w, h));
  return svg;
}

export function pips(tile: string): [number, number] {
  const [a, b] = tile.split("-").map(Number);
  return [a, b];
}

/** The same tile written either way round ("6-4" and "4-6"). */
export function sameTile(x: string, y: string): boolean {
  const [a, b] = pips(x);
  const [c, d] = pips(y);
  return (a === c && b === d) || (a === d && b === c);
}

// --- cards ---------------------------------------------------------------------------------------

export const SUIT_SIGNS: Record<string, string> = { S: "♠", H: "♥", D: "♦", C: "♣" };
export const SUIT_NAMES: Record<string, string> = { S: "spades", H: "hearts", D: "diamonds", C: "clubs", NT: "no-trump" };
const RANK_NAMES: Record<string, string> = { A: "ace", T: "ten", K: "king", Q: "queen", J: "jack", "9": "nine" };

export function rankText(code: string): string {
  return code[0] === "T" ? "10" : code[0];
}

/** A card in words, for screen readers: "queen of hearts". */
export function cardName(code: string): string {
  return `${RANK_NAMES[code[0]] ?? code[0]} of ${SUIT_NAMES[code[1]] ?? code[1]}`;
}

/** A card's face: rank and suit in the corners, the suit large in the middle; four suit colours
 * (black spades, red hearts, blue diamonds, green clubs) as well as four shapes, so no two suits differ
 * by colour alone. */
export function cardSvg(code: string, extra = ""): SVGSVGElement {
  const suit = code[1];
  const svg = s("svg", { viewBox: "0 0 50 70", class: `card suit-${suit} ${extra}`.trim(), "aria-hidden": "true" });
  svg.append(
    s("rect", { x: 1, y: 1, width: 48, height: 68, rx: 5, class: "face" }),
    s("text", { x: 5, y: 17, class: "rank" }, rankText(code)),
    s("text", { x: 5, y: 31, class: "corner-suit" }, SUIT_SIGNS[suit] ?? suit),
    s("text", { x: 30, y: 56, class: "big-suit", "text-anchor": "middle" }, SUIT_SIGNS[suit] ?? suit),
  );
  return svg;
}

/** The back of a card (the talon before it is shown, the hands of the others). */
export function cardBack(extra = ""): SVGSVGElement {
  const svg = s("svg", { viewBox: "0 0 50 70", class: `card back ${extra}`.trim(), "aria-hidden": "true" });
  svg.append(s("rect", { x: 1, y: 1, width: 48, height: 68, rx: 5, class: "back-face" }), s("rect", { x: 6, y: 6, width: 38, height: 58, rx: 3, class: "back-inner" }));
  return svg;
}

/** "1 card", "2 cards". */
export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}
