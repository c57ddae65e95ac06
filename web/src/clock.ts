// Clocks as they read now. Views carry match times (ms since the match was created); `MatchTime` maps
// them onto this browser's clock. Every Update carries the service's own reading (`match_time_ms`, the
// match time when it was built), so `local - reading` is the offset up to one network hop; a view
// without one (an Act reply) still bounds it, since its decision began at `decision_since_ms` before it
// reached us (the terminal client's rule, tablehall/render.py). The smallest bound seen is kept: a shown
// clock is a hair generous, by one hop, never short. The server alone decides a time loss.
// Both games' views name the running decision alike: `clock_running` (whose), `decision_since_ms` (since
// when) and `deadline_ms` (when that player has lost on time); 501♠ has them only with a decision limit.
import type { View } from "./api";

export class MatchTime {
  offset: number | null = null;

  observe(view: View, reading?: number): void {
    const since = view.decision_since_ms;
    if (typeof reading === "number") this.bound(performance.now() - reading);
    if (typeof since === "number") this.bound(performance.now() - since);
  }

  private bound(bound: number): void {
    this.offset = this.offset === null ? bound : Math.min(this.offset, bound);
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

/** A clock as players read it: 1:05 from ten seconds up, then 9.8 with tenths. */
export function clockText(ms: number): string {
  const left = Math.max(0, ms);
  if (left < 10_000) return (Math.floor(left / 100) / 10).toFixed(1);
  const seconds = Math.floor(left / 1000);
  return `${Math.floor(seconds / 60)}:${String(seconds % 60).padStart(2, "0")}`;
}

/** Low time: under 10 s (under a third of an allowance shorter than 30 s). */
export function isLow(ms: number, allowance: number): boolean {
  return ms < Math.min(10_000, allowance / 3);
}

let audio: AudioContext | null = null;
let lastBeep = -1;

/** The optional low-time sound (header toggle, kept in localStorage): one short beep each second. */
export function beep(ms: number): void {
  if (localStorage.getItem("tablehall:sound") !== "on") return;
  const second = Math.ceil(ms / 1000);
  if (second === lastBeep) return;
  lastBeep = second;
  try {
    audio ??= new AudioContext();
    const tone = audio.createOscillator();
    const gain = audio.createGain();
    gain.gain.value = 0.05;
    tone.frequency.value = 880;
    tone.connect(gain).connect(audio.destination);
    tone.start();
    tone.stop(audio.currentTime + 0.08);
  } catch {
    // no sound on this device
  }
}

export function mmss(ms: number): string {
  const tenths = Math.round(Math.max(0, ms) / 100); // rounded before splitting: 59.96 s is 1:00.0, not 0:60.0
  const minutes = Math.floor(tenths / 600);
  const seconds = (tenths - minutes * 600) / 10;
  return `${minutes}:${seconds.toFixed(1).padStart(4, "0")}`;
}
