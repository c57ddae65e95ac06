// End to end in a real browser: Debian's Chromium, driven by playwright-core, creates a match on the page,
// hands the other seats' tokens to whoever runs this (one line `INVITE {...}` per seat on stdout;
// tests/test_web_e2e.py starts a bot on each), then plays its seat (or, on a shared device, every seat)
// through the page's own controls until the match is over. Along the way it makes the mistakes a person
// makes (a bid below the minimum, one card given to both opponents) and checks the page says why, checks
// that a running clock counts down and that a hand-over screen shows no hand. It saves screenshots and
// every response body the page received (for the byte-level leak check), and prints `RESULT {...}`.
// In Spectacular Bid it takes every lead auction it is offered (bids rather than declines, raises once,
// then accepts), so that the auction screen is played through the page; a match on one device keeps the
// default 150 points (long enough for auctions), a shared device plays to 30.
//
//   node e2e/play.mjs URL OUT_DIR GAME [connect|grpc-web] [shared|limit=SECONDS]
//     GAME: spectacular-bid or 501; limit=SECONDS: 501♠ with that decision limit (the page counts it down)
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out, game = "spectacular-bid", protocol = "connect", mode = ""] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node e2e/play.mjs URL OUT_DIR [spectacular-bid|501] [connect|grpc-web] [shared|limit=SECONDS]");
  process.exit(2);
}
const shared = mode === "shared";
const limit = mode.startsWith("limit=") ? mode.slice("limit=".length) : "";
const sb = game === "spectacular-bid";
const name = `web-${sb ? "sb" : "501"}${shared ? "-shared" : ""}`;
mkdirSync(out, { recursive: true });
const PREFERENCE = sb
  ? ["ready", "reveal", "bid", "raise", "accept", "decline", "play", "draw"] // any auction before anything else
  : ["ready", "reveal", "look", "play", "draw", "bid", "declare", "pass"];
const AUCTION = ["bid", "raise", "accept", "decline"];
const STEP_MS = 20_000; // one move of the page, or of a bot, never takes this long

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
  refusals: [],
  mistakes: [],
  handovers: 0,
  handsOnHandover: 0,
  clockTicked: false,
  countdown: null, // the page's own running clock: time left (ms) and text, then again a moment later
  declared: 0,
  picture: false,
  arms: false,
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

async function move(page) {
  const seq = await shown(page);
  if (seq.endsWith("|handover")) {
    seen.handovers += 1;
    seen.handsOnHandover += await page.locator(".hand .tile, .hand .card").count();
  }
  const enabled = page.locator("button.action:not([disabled])");
  const choices = await enabled.evaluateAll((buttons) => buttons.map((b) => b.getAttribute("data-do")));
  const raised = seen.auction.includes("raise"); // one raise a match, then accept: no bidding war
  let kind = PREFERENCE.find((k) => choices.includes(k) && !(k === "raise" && raised));
  if (kind === "bid" && !sb && Number(await page.locator("input[name=amount]").getAttribute("min")) > 100) kind = "pass";
  if (!kind) return changed(page, seq, false); // not ours to move: wait for the stream
  const mine = page.locator("tr.me .clock.running");
  if (!seen.clockTicked && kind !== "look" && (await mine.count())) {
    // our decision runs: its clock (bank and delay, or 501♠'s limit) counts down between two views of the page
    const first = { ms: Number(await mine.getAttribute("data-left-ms")), text: await mine.textContent() };
    await page.waitForFunction(
      (b) => {
        const el = document.querySelector("tr.me .clock.running");
        return !!el && Number(el.getAttribute("data-left-ms")) < b.ms && el.textContent !== b.text;
      },
      first,
      { timeout: STEP_MS },
    );
    const then = { ms: Number(await mine.getAttribute("data-left-ms")), text: await mine.textContent() };
    seen.countdown = [first, then];
    seen.clockTicked = true;
  }
  if (kind === "bid" && !sb && !seen.mistakes.length) {
    const amount = page.locator("input[name=amount]");
    const least = Number(await amount.getAttribute("min"));
    await mistake(page, async () => {
      await amount.fill(String(least - 1));
      await page.locator("button[data-do=bid]").click();
    }, ["a bid is at least", "higher than the standing"]);
    await amount.fill(String(least));
  }
  if (kind === "declare" && !seen.mistakes.some((m) => m.includes("different card"))) {
    const gives = page.locator("select[name=give]");
    const first = await gives.nth(0).inputValue();
    await mistake(page, async () => {
      await gives.nth(1).selectOption(first);
      await page.locator("button[data-do=declare]").click();
    }, ["different card"]);
    const others = await gives.nth(1).locator("option").evaluateAll((o, f) => o.map((x) => x.value).filter((v) => v !== f), first);
    await gives.nth(1).selectOption(others[0]);
  }
  try {
    await page.locator(`button.action[data-do='${kind}']:not([disabled])`).first().click({ timeout: 3000 });
  } catch (error) {
    if (!String(error).includes("Timeout")) throw error;
    return; // the page moved on under the pointer (a change arrived): look again
  }
  seen.moves += 1;
  if (kind === "declare") seen.declared += 1;
  if (sb && AUCTION.includes(kind)) seen.auction.push(kind);
  await changed(page, seq);
  if (await page.locator("[data-error]").count()) {
    seen.refusals.push(await page.locator("#error").textContent()); // a stale view: the stream brings the news
    await changed(page, seq, false);
  }
  // a match in full swing: a layout of four tiles (taken again once the spinner's arms show), or a trick
  const arms = sb && (await page.locator(".tile.arm-n, .tile.arm-s").count()) > 0;
  const swing = sb ? (await page.locator(".layout-grid .tile").count()) >= 4 : (await page.locator(".trick .played").count()) > 0;
  if ((swing && !seen.picture) || (arms && !seen.arms)) {
    seen.picture = true;
    seen.arms = arms;
    await page.screenshot({ path: join(out, `${name}-midgame.png`), fullPage: true });
  }
}

let page;
try {
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
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
  if (sb && shared) await page.fill("#create input[name=points]", "30");
  if (!sb) await page.fill("#create input[name=score]", "120");
  if (limit) await page.fill("#create input[name=limit]", limit);
  if (shared) await page.check("#create input[name=shared]");
  await page.click("#create button[type=submit]");
  await page.locator("[data-match]").waitFor({ timeout: STEP_MS });
  const matchId = await page.locator("[data-match]").getAttribute("data-match");
  for (const invite of await page.locator("[data-invite-seat]").all()) {
    const seat = Number(await invite.getAttribute("data-invite-seat"));
    console.log(`INVITE ${JSON.stringify({ match: matchId, seat, token: await invite.getAttribute("data-token") })}`);
  }
  console.log("INVITED");

  while (!(await page.locator(".result").count())) await move(page);
  const result = await page.locator(".result").textContent();
  const scores = await page.locator(sb ? "[data-points]" : "[data-score]").allTextContents();
  await page.screenshot({ path: join(out, `${name}-over.png`), fullPage: true });
  await page.waitForFunction(() => document.getElementById("connection")?.textContent === "match over", null, { timeout: STEP_MS });
  await Promise.allSettled(pending);
  writeFileSync(join(out, "received.json"), JSON.stringify(received));
  console.log(`RESULT ${JSON.stringify({ match: matchId, result, scores: scores.map(Number), ...seen })}`);
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
