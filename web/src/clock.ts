// Clocks as they read now. Views carry match times (ms since the match was created); `MatchTime` maps
// them onto this browser's clock the way the terminal client does (tablehall/render.py): each update
// whose decision started at `decision_since_ms` reached us after that instant, so `local - since`
// bounds the offset from above and the smallest bound seen is kept (a shown clock is a hair generous,
// by one network hop, never short). The server alone decides a time loss.
// Both games' views name the running decision alike: `clock_running` (whose), `decision_since_ms` (since
// when) and `deadline_ms` (when that player has lost on time); 501♠ has them only with a decision limit.
import type { View } from "./api";

export class MatchTime {
  offset: number | null = null;

  observe(view: View): void {
    const since = view.decision_since_ms;
    if (typeof since === "number") {
      const bound = performance.now() - since;
      this.offset = this.offset === null ? bound : Math.min(this.offset, bound);
    }
  }

  now(): number | null {
    return this.offset === null ? null : performance.now() - this.offset;
  }
}

/** Either game: whose decision runs and the time it has left at match time `now` (until `deadline_ms`:
 * Spectacular Bid's delay and bank together, 501♠'s decision limit); null when no decision is timed. */
export function decisionLeft(view: View, now: number | null): { seat: number; ms: number } | null {
  const seat = view.clock_running;
  if (typeof seat !== "number" || typeof view.deadline_ms !== "number" || now === null) return null;
  return { seat, ms: Math.max(0, view.deadline_ms - now) };
}

export interface SeatClock {
  bankMs: number;
  delayMs: number | null; // the running decision's delay left; null when this seat's clock is stopped
  running: boolean;
}

/** Spectacular Bid (SB-10): each bank, and the running decision's delay, at match time `now`. */
export function sbClocks(view: View, now: number | null): SeatClock[] {
  const running = view.clock_running;
  return (view.banks_ms as number[]).map((bank, seat) => {
    if (seat === running && typeof view.decision_since_ms === "number" && now !== null) {
      const elapsed = now - view.decision_since_ms;
      const delayLeft = view.delay_ms - elapsed;
      return { bankMs: Math.max(0, bank - Math.max(0, -delayLeft)), delayMs: Math.max(0, delayLeft), running: true };
    }
    return { bankMs: bank, delayMs: null, running: false };
  });
}

export function mmss(ms: number): string {
  const tenths = Math.round(Math.max(0, ms) / 100); // rounded before splitting: 59.96 s is 1:00.0, not 0:60.0
  const minutes = Math.floor(tenths / 600);
  const seconds = (tenths - minutes * 600) / 10;
  return `${minutes}:${seconds.toFixed(1).padStart(4, "0")}`;
}
