// The Spectacular Bid Layout drawn as it lies on a table: the lead in the middle, the line running W and E
// and bending back (a snake) before it leaves the screen, the spinner crosswise with its N and S arms, the
// newest tile marked, and at each open end a marker with the pips it shows. When a Tile of the hand is
// picked, the ends it may go to (from the view's `legal`) glow with the count that play would make.
import type { View } from "./api";
import { pips, s, tileGroup } from "./pieces";

export interface Target {
  end: string | null; // null: the lead (the layout is empty)
  count: number | null;
  label: string; // for screen readers and the tooltip
  play: () => void;
}

interface Placed {
  x: number;
  y: number;
  w: number;
  h: number;
  a: number;
  b: number;
  double: boolean;
  across: boolean; // laid along a horizontal run
}

interface Walk {
  px: number;
  py: number;
  dx: number;
  dy: number;
}

const ENDS: Record<string, string> = { W: "west", E: "east", N: "north", S: "south" };

/** Lays one tile at the walk's point along its direction; `inner` touches the point. */
function lay(walk: Walk, inner: number, outer: number, out: Placed[]): Placed {
  const double = inner === outer;
  const along = double ? 1 : 2;
  const thick = double ? 2 : 1;
  const horizontal = walk.dy === 0;
  let x: number, y: number, w: number, h: number;
  if (horizontal) {
    [w, h] = [along, thick];
    x = walk.dx > 0 ? walk.px : walk.px - along;
    y = walk.py - thick / 2;
  } else {
    [w, h] = [thick, along];
    x = walk.px - thick / 2;
    y = walk.dy > 0 ? walk.py : walk.py - along;
  }
  const forward = walk.dx > 0 || walk.dy > 0;
  const placed = { x, y, w, h, a: forward ? inner : outer, b: forward ? outer : inner, double, across: horizontal };
  out.push(placed);
  walk.px += walk.dx * along;
  walk.py += walk.dy * along;
  return placed;
}

/** One line (W or E) from the lead outwards, bending back between `inner` and `outer` (|x|). */
function line(tiles: string[], walk: Walk, side: number, inner: number, outer: number, out: Placed[], spinner: number | null, found: { at: Placed | null }): Walk {
  const bend = side; // E bends down, W bends up: the two snakes never meet
  for (const t of tiles) {
    const [near, far] = pips(t);
    const length = near === far ? 1 : 2;
    if (walk.dy === 0) {
      const next = walk.px + walk.dx * length;
      const outward = walk.dx === side;
      if ((outward && Math.abs(next) > outer) || (!outward && Math.abs(next) < inner)) {
        // the corner: the next tile goes down (or up) under the last half, then the run turns back
        walk.px -= walk.dx * 0.5;
        walk.py += bend * 0.5;
        const heading = walk.dx;
        walk.dx = 0;
        walk.dy = bend;
        const placed = lay(walk, near, far, out);
        if (found.at === null && spinner !== null && near === spinner && far === spinner) found.at = placed;
        walk.py -= bend * 0.5;
        walk.px -= heading * 0.5;
        walk.dx = -heading;
        walk.dy = 0;
        continue;
      }
    }
    const placed = lay(walk, near, far, out);
    if (found.at === null && spinner !== null && near === spinner && far === spinner) found.at = placed;
  }
  return walk;
}

/** The layout as an SVG: `bound` is how many squares the line may run from the middle before it bends. */
export function drawLayout(layout: View, bound: number, newest: string | null, targets: Target[]): SVGSVGElement {
  const placed: Placed[] = [];
  const ends: Record<string, Walk> = {};
  const spinner: number | null = layout.spinner ?? null;
  const lines: Record<string, string[]> = layout.lines ?? {};
  const found: { at: Placed | null } = { at: null };
  let leadPlaced: Placed | null = null;
  if (layout.lead) {
    const [a, b] = pips(layout.lead);
    const double = a === b;
    leadPlaced = double
      ? { x: -0.5, y: -1, w: 1, h: 2, a, b, double, across: true }
      : { x: -1, y: -0.5, w: 2, h: 1, a, b, double, across: true };
    placed.push(leadPlaced);
    if (double && spinner === a) found.at = leadPlaced;
    const half = double ? 0.5 : 1;
    const inner = 1.5; // the returning runs keep clear of the spinner's arms
    ends.W = line(lines.W ?? [], { px: -half, py: 0, dx: -1, dy: 0 }, -1, inner, bound, placed, spinner, found);
    ends.E = line(lines.E ?? [], { px: half, py: 0, dx: 1, dy: 0 }, 1, inner, bound, placed, spinner, found);
    const sp = found.at;
    if (sp) {
      const cx = sp.x + sp.w / 2;
      const cy = sp.y + sp.h / 2;
      const up: Walk = sp.across ? { px: cx, py: sp.y, dx: 0, dy: -1 } : { px: sp.x, py: cy, dx: -1, dy: 0 };
      const down: Walk = sp.across ? { px: cx, py: sp.y + sp.h, dx: 0, dy: 1 } : { px: sp.x + sp.w, py: cy, dx: 1, dy: 0 };
      for (const [end, walk] of [["N", up], ["S", down]] as [string, Walk][]) {
        for (const t of lines[end] ?? []) {
          const [near, far] = pips(t);
          lay(walk, near, far, placed);
        }
        ends[end] = walk;
      }
    }
  }
  const newestPlaced = newest === "lead" ? leadPlaced : newest && (lines[newest] ?? []).length ? lastOf(placed, lines, newest, leadPlaced) : null;

  // the open ends: a marker one step beyond each, showing its pips (or, as a target, the count)
  const open: Record<string, number> = layout.open_ends ?? {};
  const markers: { end: string | null; x: number; y: number; pip: number | null; target: Target | null }[] = [];
  for (const [end, pip] of Object.entries(open)) {
    const walk = ends[end];
    if (!walk) continue;
    markers.push({ end, x: walk.px + walk.dx * 0.75, y: walk.py + walk.dy * 0.75, pip, target: targets.find((t) => t.end === end) ?? null });
  }
  const lead = targets.find((t) => t.end === null);
  if (lead) markers.push({ end: null, x: 0, y: 0, pip: null, target: lead });

  // the box around everything
  const xs = [...placed.flatMap((p) => [p.x, p.x + p.w]), ...markers.flatMap((m) => [m.x - 0.8, m.x + 0.8]), -2, 2];
  const ys = [...placed.flatMap((p) => [p.y, p.y + p.h]), ...markers.flatMap((m) => [m.y - 0.6, m.y + 0.6]), -1.2, 1.2];
  const [minX, maxX, minY, maxY] = [Math.min(...xs) - 0.3, Math.max(...xs) + 0.3, Math.min(...ys) - 0.3, Math.max(...ys) + 0.3];
  const svg = s("svg", {
    viewBox: `${minX} ${minY} ${maxX - minX} ${maxY - minY}`,
    class: "layout-svg",
    role: "img",
    "aria-label": describe(layout),
    "data-width-squares": (maxX - minX).toFixed(1),
  });
  svg.style.aspectRatio = `${maxX - minX} / ${maxY - minY}`;
  svg.style.width = `min(100%, ${Math.round((maxX - minX) * 30)}px)`; // a square of the table: 30 px at most
  for (const p of placed) {
    const classes = [p === found.at ? "spinner" : "", p === newestPlaced ? "newest" : "", p === leadPlaced ? "lead" : ""].join(" ");
    svg.append(tileGroup(p.a, p.b, p.x, p.y, p.w, p.h, classes));
    if (p === newestPlaced) svg.append(s("rect", { x: p.x - 0.08, y: p.y - 0.08, width: p.w + 0.16, height: p.h + 0.16, rx: 0.2, class: "newest-ring" }));
  }
  for (const m of markers) svg.append(marker(m.end, m.x, m.y, m.pip, m.target));
  return svg;
}

function lastOf(placed: Placed[], lines: Record<string, string[]>, end: string, lead: Placed | null): Placed | null {
  // tiles are laid W line, E line, N, S in that order after the lead: find the last of `end`'s run
  const order = ["W", "E", "N", "S"];
  let at = lead ? 1 : 0;
  for (const e of order) {
    const n = (lines[e] ?? []).length;
    if (e === end) return n ? placed[at + n - 1] ?? null : null;
    at += n;
  }
  return null;
}

function marker(end: string | null, x: number, y: number, pip: number | null, target: Target | null): SVGGElement {
  const g = s("g", { class: `end-marker ${target ? "target" : ""}`.trim(), "data-end": end ?? "lead" });
  if (target) {
    g.setAttribute("role", "button");
    g.setAttribute("tabindex", "0");
    g.setAttribute("aria-label", target.label);
    g.append(s("title", {}, target.label));
    g.append(s("rect", { x: x - 0.75, y: y - 0.5, width: 1.5, height: 1, rx: 0.25, class: "glow" }));
    const count = target.count;
    const scores = count !== null && count > 0 && count % 5 === 0;
    g.append(s("text", { x, y: y + (scores ? -0.05 : 0.12), "text-anchor": "middle", class: "target-count" }, end === null ? "lead" : `=${count ?? "?"}`));
    if (scores) g.append(s("text", { x, y: y + 0.36, "text-anchor": "middle", class: "target-score" }, `+${count}`));
    g.addEventListener("click", () => target.play());
    g.addEventListener("keydown", (event) => {
      if (event.key === "Enter" || event.key === " ") {
        event.preventDefault();
        target.play();
      }
    });
  } else {
    g.append(s("title", {}, `${ENDS[end ?? ""] ?? end} end shows ${pip}`));
    g.append(s("circle", { cx: x, cy: y, r: 0.36, class: "end-dot" }));
    g.append(s("text", { x, y: y + 0.15, "text-anchor": "middle", class: "end-pip" }, String(pip)));
  }
  return g;
}

/** The layout in words, for screen readers. */
export function describe(layout: View): string {
  if (!layout.lead) return "The layout is empty.";
  const ends = Object.entries(layout.open_ends ?? {}).map(([e, p]) => `${ENDS[e] ?? e} ${p}`).join(", ");
  const spinner = layout.spinner !== null && layout.spinner !== undefined ? `, spinner ${layout.spinner}-${layout.spinner}` : "";
  return `Layout led with ${layout.lead}${spinner}; open ends ${ends || "none"}; count ${layout.count}.`;
}
