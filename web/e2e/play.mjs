// End to end in a real browser: Debian's Chromium, driven by playwright-core, creates a match on the page,
// hands the other seats' tokens to whoever runs this (one line `INVITE {...}` per seat on stdout;
// tests/test_web_e2e.py starts a bot on each), then plays its seat (or, on a shared device, every seat) by
// touching the pieces as a person does: a Tile of the hand, then a glowing end; a raised card; the trump,
// target and one card per opponent of a declaration. With `keys` it uses the keyboard only (Tab, arrows,
// Enter). Along the way it checks that nothing is wider than the screen, that the controls are on screen,
// that a running clock counts down and that each round's or hand's summary is shown (kept for the test),
// saves screenshots and every response body the page received (for the byte-level leak check), and prints
// `RESULT {...}`. In Spectacular Bid it takes every lead auction it is offered (bids rather than declines,
// raises once, then accepts), so that the auction is played through the page.
//
//   node e2e/play.mjs URL OUT_DIR GAME [connect|grpc-web] [MODE,...]
//     GAME: spectacular-bid or 501; MODE: shared | limit=SECONDS | phone | keys | points=N | bank=SECONDS
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out, game = "spectacular-bid", protocol = "connect", modes = ""] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node e2e/play.mjs URL OUT_DIR [spectacular-bid|501] [connect|grpc-web] [shared,limit=S,phone,keys,points=N,bank=S]");
  process.exit(2);
}
const mode = Object.fromEntries(modes.split(",").filter(Boolean).map((m) => (m.includes("=") ? m.split("=") : [m, true])));
const shared = !!mode.shared;
const keys = !!mode.keys;
const phone = !!mode.phone;
const sb = game === "spectacular-bid";
const name = `web-${sb ? "sb" : "501"}${shared ? "-shared" : ""}${phone ? "-phone" : ""}${keys ? "-keys" : ""}`;
mkdirSync(out, { recursive: true });
const PREFERENCE = sb
  ? ["ready", "reveal", "bid", "raise", "accept", "decline", "draw"] // any auction before anything else
  : ["look", "bid", "pass"];
const AUCTION = ["bid", "raise", "accept", "decline"];
const STEP_MS = 20_000; // one move of the page, or of a bot, never takes this long
const VIEWPORT = phone ? { width: 360, height: 740 } : { width: 1280, height: 800 };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
  ], // Playwright gives it a new, empty profile (--user-data-dir) of its own
});
const received = [];
const pending = [];
const seen = {
  moves: 0,
  taps: 0, // plays made by touching a piece (a tile then an end, or a card)
  keyed: 0, // actions made with the keyboard only
  refusals: [],
  mistakes: [],
  handovers: 0,
  handsOnHandover: 0,
  clockTicked: false,
  countdown: null, // the page's own running clock: time left (ms) and text, then again a moment later
  declared: 0,
  overflow: [], // elements wider than the screen (none expected)
  dockHidden: 0, // times the controls were off screen while the page had a move
  summaries: [], // each round or hand summary as the page showed it
  shots: [],
  auction: [], // the lead-auction actions clicked on the page (Spectacular Bid)
};

function record(response) {
  const path = new URL(response.url()).pathname;
  if (!path.startsWith("/tablehall.v1.")) return;
  const type = response.headers()["content-type"] ?? "";
  pending.push(
    response
      .body()
      .then((body) => received.push({ path, status: response.status(), type, body: body.toString("base64") }))
      .catch((error) => received.push({ path, status: response.status(), unreadable: String(error) })),
  );
}

/** What the board shows: the change it is at, and its screen (a phase, or a hand-over). */
async function shown(page) {
  return page.evaluate(() => {
    const board = document.querySelector(".board");
    return `${board?.getAttribute("data-seq")}|${board?.getAttribute("data-phase")}`;
  });
}

/** Waits until the board shows something else (or an error, or the result). */
async function changed(page, before, orError = true) {
  await page.waitForFunction(
    ([b, e]) => {
      const board = document.querySelector(".board");
      return (
        `${board?.getAttribute("data-seq")}|${board?.getAttribute("data-phase")}` !== b ||
        (e && !!document.querySelector("[data-error]")) ||
        !!document.querySelector(".result")
      );
    },
    [before, orError],
    { timeout: STEP_MS },
  );
}

async function shot(page, key) {
  if (seen.shots.includes(key)) return;
  seen.shots.push(key);
  await page.screenshot({ path: join(out, `${name}-${key}.png`), fullPage: false });
}

/** Nothing wider than the screen: every element's box within the viewport's width, no sideways scroll. */
async function checkFit(page, where) {
  const wide = await page.evaluate(() => {
    const width = document.documentElement.clientWidth;
    const out = [];
    if (document.documentElement.scrollWidth > width) out.push(`page scrolls sideways (${document.documentElement.scrollWidth} > ${width})`);
    for (const el of document.querySelectorAll("body *")) {
      const box = el.getBoundingClientRect();
      if (box.width === 0 || getComputedStyle(el).position === "fixed" && box.width <= width) continue;
      if (box.right > width + 0.5 || box.left < -0.5) out.push(`${el.tagName.toLowerCase()}.${el.getAttribute("class") ?? ""} ${Math.round(box.left)}..${Math.round(box.right)} > ${width}`);
    }
    return out.slice(0, 5);
  });
  for (const w of wide) if (!seen.overflow.includes(w)) seen.overflow.push(`${where}: ${w}`);
}

/** The controls are on screen whenever the page has a move. */
async function checkDock(page) {
  const off = await page.evaluate(() => {
    const dock = document.querySelector(".dock.mine");
    if (!dock) return false;
    const box = dock.getBoundingClientRect();
    return box.top < 0 || box.bottom > window.innerHeight + 0.5 ? `${Math.round(box.top)}..${Math.round(box.bottom)} of ${window.innerHeight}` : false;
  });
  if (off) {
    seen.dockHidden += 1;
    seen.dockWhere = off;
    if (!seen.shots.includes("dock-hidden")) await shot(page, "dock-hidden");
  }
}

/** Keyboard only: Tab until the focus is on something matching `selector` (at most 80 presses). */
async function tabTo(page, selector) {
  for (let i = 0; i < 80; i++) {
    if (await page.evaluate((s) => !!document.activeElement?.matches(s), selector)) return true;
    await page.keyboard.press("Tab");
  }
  return false;
}

async function press(page, selector) {
  if (keys) {
    if (!(await tabTo(page, selector))) throw new Error(`the keyboard never reached ${selector}`);
    await page.keyboard.press("Enter");
    seen.keyed += 1;
  } else await page.locator(selector).first().click({ timeout: 3000 });
}

/** The summary on screen (a round's or a hand's), as numbers the test checks against the record. */
async function readSummary(page) {
  return page.evaluate(() => {
    const el = document.querySelector(".summary");
    if (!el) return null;
    const facts = [...el.querySelectorAll("[data-fact]")].map((f) => ({ fact: f.getAttribute("data-fact"), ...Object.fromEntries([...f.attributes].filter((a) => a.name.startsWith("data-") && a.name !== "data-fact").map((a) => [a.name.slice(5), a.value])), text: f.textContent }));
    const rows = [...el.querySelectorAll("[data-hand-seat]")].map((r) => ({
      seat: Number(r.getAttribute("data-hand-seat")),
      took: Number(r.querySelector("[data-took]")?.getAttribute("data-took")),
      delta: Number(r.querySelector("[data-delta]")?.getAttribute("data-delta")),
      after: Number(r.querySelector("[data-after]")?.getAttribute("data-after")),
    }));
    return { round: el.getAttribute("data-summary-round"), hand: el.getAttribute("data-summary-hand"), title: el.querySelector("h2")?.textContent, facts, rows };
  });
}

async function noteSummary(page) {
  const s = await readSummary(page);
  if (!s) return;
  const key = `${s.round ?? ""}|${s.hand ?? ""}|${s.title}`;
  if (seen.summaries.some((x) => x.key === key)) return;
  seen.summaries.push({ key, ...s });
  if (s.facts.some((f) => f.fact === "block")) await shot(page, "block-summary");
  if (s.hand) await shot(page, "hand-summary");
}

async function clockCheck(page) {
  const mine = page.locator(".player.me .clock.running");
  if (seen.clockTicked || !(await mine.count())) return;
  // our decision runs: its clock (bank and delay, or 501♠'s limit) counts down between two looks
  const first = { ms: Number(await mine.getAttribute("data-left-ms")), text: await mine.textContent() };
  await page.waitForFunction(
    (b) => {
      const el = document.querySelector(".player.me .clock.running");
      return !!el && Number(el.getAttribute("data-left-ms")) < b.ms && el.textContent !== b.text;
    },
    first,
    { timeout: STEP_MS },
  );
  const then = { ms: Number(await mine.getAttribute("data-left-ms")), text: await mine.textContent() };
  seen.countdown = [first, then];
  seen.clockTicked = true;
}

/** Spectacular Bid: tap a raised Tile, then the first glowing end. */
async function playTile(page) {
  const tile = page.locator(".hand-tile.legal:not([disabled])");
  if (!(await tile.count())) return false;
  const phase = (await shown(page)).split("|")[1];
  if (phase === "lead") await shot(page, "lead");
  if (keys) {
    await press(page, ".hand-tile.legal:not([disabled])");
    await page.locator(".end-marker.target").first().waitFor({ timeout: STEP_MS });
    await page.waitForFunction(() => document.activeElement?.matches(".end-marker.target"), null, { timeout: STEP_MS });
    await page.keyboard.press("Enter");
    seen.keyed += 1;
  } else if ((seen.stuck ?? 0) >= 2) {
    // twice a touch found no way to the piece on an unchanged board (seen on a loaded machine, phone size):
    // the picture is kept for the record and this move is made with the keys, so the match goes on
    await shot(page, "untouchable");
    seen.untouchable = (seen.untouchable ?? 0) + 1;
    await tile.first().focus();
    await page.keyboard.press("Enter");
    await page.locator(".end-marker.target").first().waitFor({ timeout: STEP_MS });
    await page.waitForFunction(() => document.activeElement?.matches(".end-marker.target"), null, { timeout: STEP_MS });
    await page.keyboard.press("Enter");
    return true;
  } else {
    await tile.first().click({ timeout: 3000 });
    await page.locator(".end-marker.target").first().click({ timeout: 3000 });
  }
  seen.taps += 1;
  return true;
}

/** 501♠: tap a raised card (a marriage lead announces it). */
async function playCard(page) {
  const card = page.locator(".hand-card.legal:not([disabled])");
  if (!(await card.count())) return false;
  if ((await page.locator(".trick .played").count()) >= 2) await shot(page, "trick");
  await card.first().click({ timeout: 3000 });
  if (await page.locator("button.marriage").count()) await page.locator("button.marriage").first().click({ timeout: 3000 });
  seen.taps += 1;
  return true;
}

/** 501♠: the guided declaration: trump, target, then one card tapped for each opponent. */
async function declare(page) {
  if (!(await page.locator("button[data-trump]").count())) return false;
  await page.locator("button[data-trump]").first().click();
  await page.locator("button[data-step=target]").click();
  const before = await page.locator("button[data-do=declare]").isDisabled();
  if (!before) throw new Error("the declaration could be sent before any card was chosen");
  const cards = page.locator(".hand-card:not([disabled])");
  await cards.nth(0).click();
  await cards.nth(1).click();
  await shot(page, "declare");
  await page.locator("button[data-do=declare]:not([disabled])").click();
  seen.declared += 1;
  return true;
}

async function move(page) {
  // an action of ours is on its way: the controls are off until its answer (a press now would do nothing)
  await page.waitForFunction(() => !document.querySelector(".board.busy"), null, { timeout: STEP_MS });
  const seq = await shown(page);
  if (seq.endsWith("|handover")) {
    seen.handovers += 1;
    seen.handsOnHandover += await page.locator(".hand .hand-tile, .hand .hand-card").count();
  }
  if (phone) await checkFit(page, seq);
  await checkDock(page);
  await noteSummary(page);
  if (sb && (await page.locator(".layout-svg").count())) {
    const arms = await page.evaluate(() => document.querySelector(".game")?.getAttribute("data-arms"));
    if (arms === "4") await shot(page, "spinner-arms");
  }
  if (!sb && (await page.locator("[data-dismiss=hand]").count())) {
    await press(page, "[data-dismiss=hand]");
    return;
  }
  const enabled = page.locator("button.action:not([disabled])");
  const choices = await enabled.evaluateAll((buttons) => buttons.map((b) => b.getAttribute("data-do")));
  const raised = seen.auction.includes("raise"); // one raise a match, then accept: no bidding war
  let kind = PREFERENCE.find((k) => choices.includes(k) && !(k === "raise" && raised));
  if (kind === "bid" && !sb && Number(await page.locator("input[name=amount]").getAttribute("min")) > 100) kind = "pass";
  const hasPiece = (await page.locator(".hand-tile.legal:not([disabled]), .hand-card.legal:not([disabled]), button[data-trump]").count()) > 0;
  if (!kind && !hasPiece) return changed(page, seq, false); // not ours to move: wait for the stream
  if (kind !== "look" && kind !== "ready") await clockCheck(page);
  if (sb && AUCTION.includes(kind)) await shot(page, "auction");
  if (kind === "bid" && !sb && !seen.mistakes.length) {
    const amount = page.locator("input[name=amount]");
    const least = Number(await amount.getAttribute("min"));
    await mistake(page, async () => {
      await amount.fill(String(least - 1));
      await page.locator("button[data-do=bid]").click();
    }, ["a bid is at least", "higher than the standing"]);
    await amount.fill(String(least));
  }
  try {
    if (kind) {
      // the round's summary is on screen until both seats are ready: read it now, since the look above may
      // have come before the page drew the round's end (seen under load: a summary missed)
      if (kind === "ready") await noteSummary(page);
      await press(page, `button.action[data-do='${kind}']:not([disabled])`);
      if (sb && AUCTION.includes(kind)) seen.auction.push(kind);
    } else if (!(sb ? await playTile(page) : (await declare(page)) || (await playCard(page)))) return changed(page, seq, false);
  } catch (error) {
    if (!String(error).includes("Timeout")) throw error;
    // the page moved on under the pointer (a change arrived): look again — but a piece that stays
    // untouchable on an unchanged board is a failure to show, not a loop until the watchdog
    seen.stuck = (await shown(page)) === seq ? (seen.stuck ?? 0) + 1 : 0;
    if (seen.stuck >= 5) throw new Error(`nothing could be touched at ${seq} five times: ${String(error).split("\n").slice(0, 2).concat(String(error).split("\n").slice(-3)).join(" / ")}`);
    return;
  }
  seen.stuck = 0;
  seen.moves += 1;
  await changed(page, seq);
  if (await page.locator("[data-error]").count()) {
    seen.refusals.push(await page.locator("#error").textContent()); // a stale view: the stream brings the news
    await changed(page, seq, false);
  }
}

/** A person's mistake: the page must refuse it with the service's reason, and nothing moves. */
async function mistake(page, make, words) {
  const before = await shown(page);
  await make();
  await page.locator("[data-error]").waitFor({ timeout: STEP_MS });
  const text = await page.locator("#error").textContent();
  if (!words.some((w) => text.includes(w))) throw new Error(`the page explained a mistake as ${JSON.stringify(text)}`);
  if ((await shown(page)) !== before) throw new Error("a refused move changed the match");
  seen.mistakes.push(text);
}

let page;
try {
  page = await browser.newPage({ viewport: VIEWPORT, hasTouch: phone, isMobile: phone, deviceScaleFactor: 1 });
  page.on("console", (msg) => msg.type() === "error" && console.error(`page: ${msg.text()}`));
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  page.on("response", record);
  page.setDefaultTimeout(STEP_MS);

  await page.goto(protocol === "grpc-web" ? `${url}?protocol=grpc-web` : url);
  // a token that is no seat: the page says so in words
  await page.fill("#join input[name=match]", "0123456789abcdef");
  await page.fill("#join input[name=token]", "not-a-token");
  await page.click("#join button[type=submit]");
  await page.locator("[data-error]").waitFor({ timeout: STEP_MS });
  seen.joinError = await page.locator("#error").textContent();

  await page.selectOption("#create select[name=game]", game);
  await page.fill("#create input[name=name]", "Ana");
  await page.fill("#create input[name=others]", sb ? "Bot" : "Bot, Cat");
  if (sb && mode.points) await page.fill("#create input[name=points]", String(mode.points));
  if (sb && mode.bank) await page.fill("#create input[name=bank]", String(mode.bank));
  if (!sb) await page.fill("#create input[name=score]", String(mode.score ?? 120));
  if (mode.limit) await page.fill("#create input[name=limit]", String(mode.limit));
  if (shared) await page.check("#create input[name=shared]");
  await page.click("#create button[type=submit]");
  await page.locator("[data-match]").waitFor({ state: "attached", timeout: STEP_MS });
  const matchId = await page.locator("[data-match]").getAttribute("data-match");
  seen.header = await page.locator(".table-head").textContent();
  for (const invite of await page.locator("[data-invite-seat]").all()) {
    const seat = Number(await invite.getAttribute("data-invite-seat"));
    console.log(`INVITE ${JSON.stringify({ match: matchId, seat, token: await invite.getAttribute("data-token") })}`);
  }
  console.log("INVITED");

  while (!(await page.locator(".result").count())) {
    await move(page);
    if (!seen.invitesFolded && (await page.locator("#invites:not([open])").count())) seen.invitesFolded = seen.moves;
  }
  await noteSummary(page);
  const result = await page.locator(".result").textContent();
  const scores = await page.locator(sb ? "[data-points]" : "[data-score]").evaluateAll((els) =>
    els.sort((a, b) => Number(a.getAttribute(a.hasAttribute("data-points") ? "data-points" : "data-score")) - Number(b.getAttribute(b.hasAttribute("data-points") ? "data-points" : "data-score"))).map((e) => Number(e.textContent)),
  );
  if (phone) await checkFit(page, "result");
  await shot(page, "result");
  await page.screenshot({ path: join(out, `${name}-over.png`), fullPage: true });
  await page.waitForFunction(() => document.getElementById("connection")?.textContent === "match over", null, { timeout: STEP_MS });
  await Promise.allSettled(pending);
  writeFileSync(join(out, "received.json"), JSON.stringify(received));
  console.log(`RESULT ${JSON.stringify({ match: matchId, result, scores, ...seen })}`);
} catch (error) {
  console.error(`e2e failed: ${error.stack ?? error}`);
  process.exitCode = 1;
  if (page) {
    await page.screenshot({ path: join(out, `${name}-failure.png`), fullPage: true }).catch(() => {});
    writeFileSync(join(out, `${name}-failure.html`), await page.content().catch(() => ""));
  }
} finally {
  await browser.close();
}
