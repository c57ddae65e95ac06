// End to end in a real browser: Debian's Chromium, driven by playwright-core, creates a Spectacular Bid
// match on the page, hands the second seat's token to whoever runs this (a line `INVITE {...}` on
// stdout; tests/test_web_e2e.py starts a bot with it), then plays every decision of its seat through
// the page's own buttons until the match is over. It saves a screenshot and every response body the
// page received from the service (for the byte-level leak check), and prints `RESULT {...}`.
//
//   node e2e/play-sb.mjs http://127.0.0.1:8080/ OUT_DIR [start_points] [protocol]
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out, points = "30", protocol = "connect"] = process.argv.slice(2);
if (!url || !out) {
  console.error("usage: node e2e/play-sb.mjs URL OUT_DIR [start_points] [connect|grpc-web]");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const PREFERENCE = ["ready", "reveal", "play", "draw", "decline", "accept", "bid", "raise"];
const STEP_MS = 20_000; // one move of the page, or one of the bot's, never takes this long

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
let moves = 0;
let midgame = false;
const refusals = [];
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on("console", (msg) => msg.type() === "error" && console.error(`page: ${msg.text()}`));
  page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
  page.on("response", (response) => {
    const path = new URL(response.url()).pathname;
    if (!path.startsWith("/tablehall.v1.")) return;
    pending.push(
      response
        .body()
        .then((body) => received.push({ path, status: response.status(), type: response.headers()["content-type"] ?? "", body: body.toString("base64") }))
        .catch((error) => received.push({ path, status: response.status(), unreadable: String(error) })),
    );
  });

  await page.goto(protocol === "grpc-web" ? `${url}?protocol=grpc-web` : url);
  await page.fill("#create input[name=name]", "Ana");
  await page.fill("#create input[name=others]", "Bot");
  await page.fill("#create input[name=points]", points);
  await page.click("#create button[type=submit]");
  const invite = page.locator("[data-invite-seat='1']");
  await invite.waitFor({ timeout: STEP_MS });
  const matchId = await page.locator("[data-match]").getAttribute("data-match");
  const token = await invite.getAttribute("data-token");
  console.log(`INVITE ${JSON.stringify({ match: matchId, token })}`);

  const board = page.locator(".board");
  for (;;) {
    if (await page.locator(".result").count()) break;
    const seq = await board.getAttribute("data-seq");
    const enabled = page.locator("button.action:not([disabled])");
    const choices = await enabled.evaluateAll((buttons) => buttons.map((b) => b.getAttribute("data-do")));
    const kind = PREFERENCE.find((k) => choices.includes(k));
    if (!kind) {
      // not our move: wait for the next change the stream brings
      await page.waitForFunction((s) => document.querySelector(".board")?.getAttribute("data-seq") !== s || !!document.querySelector(".result"), seq, { timeout: STEP_MS });
      continue;
    }
    await page.locator(`button.action[data-do='${kind}']:not([disabled])`).first().click();
    moves += 1;
    if (!midgame && (await page.locator(".tile.arm-n, .tile.arm-s").count())) {
      midgame = true; // the layout has grown its spinner arms: a picture of a match in full swing
      await page.screenshot({ path: join(out, "web-sb-midgame.png"), fullPage: true });
    }
    await page.waitForFunction(
      (s) => document.querySelector(".board")?.getAttribute("data-seq") !== s || !!document.querySelector("[data-error]") || !!document.querySelector(".result"),
      seq,
      { timeout: STEP_MS },
    );
    const error = await page.locator("[data-error]").count();
    if (error) {
      refusals.push(await page.locator("#error").textContent());
      await page.waitForFunction((s) => document.querySelector(".board")?.getAttribute("data-seq") !== s || !!document.querySelector(".result"), seq, { timeout: STEP_MS });
    }
  }
  const result = await page.locator(".result").textContent();
  const final = await page.locator("[data-points]").allTextContents();
  await page.screenshot({ path: join(out, "web-sb-match.png"), fullPage: true });
  await page.waitForFunction(() => document.getElementById("connection")?.textContent === "match over", null, { timeout: STEP_MS });
  await Promise.allSettled(pending);
  writeFileSync(join(out, "received.json"), JSON.stringify(received));
  console.log(`RESULT ${JSON.stringify({ match: matchId, result, points: final.map(Number), moves, refusals })}`);
} catch (error) {
  console.error(`e2e failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
