// Clocks as they read now. Views carry match times (ms since the match was created); `MatchTime` maps
// them onto this browser's clock the way the terminal client does (tablehall/render.py): each update
// whose decision started at `decision_since_ms` reached us after that instant, so `local - since`
// bounds the offset from above and the smallest bound seen is kept (a shown clock is a hair generous,
// by one network hop, never short). The server alone decides a time loss.
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
  const total = Math.max(0, ms) / 1000;
  const minutes = Math.floor(total / 60);
  const seconds = total - minutes * 60;
  return `${minutes}:${seconds.toFixed(1).padStart(4, "0")}`;
}
