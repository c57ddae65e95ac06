// One person plays a bot from the page: registers a name, picks the bot's level in "Bot level" and presses
// "Play a bot" with the keyboard (Tab to it, Enter), and lands on the table at once. Prints
// `SEATED {...}` (the match, the seat shown, the names in the header, the stored key), then waits for a
// line on standard input (the test has seen the bot's seat act over gRPC), presses Continue with the
// keyboard and waits until the page shows the match past the ready step (both seats continued). Prints
// `RESULT {...}`; saves screenshots and every response body received.
//
//   node e2e/bot.mjs URL OUT_DIR NAME [GAME] [LEVEL]
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createInterface } from "node:readline";

const [url, out, name, game = "spectacular-bid", level = "greedy"] = process.argv.slice(2);
if (!url || !out || !name) {
  console.error("usage: node e2e/bot.mjs URL OUT_DIR NAME [GAME] [LEVEL]");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const STEP_MS = 30_000;
const lines = createInterface({ input: process.stdin })[Symbol.asyncIterator]();
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"],
});
const received = [];
try {
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
  const page = await context.newPage();
  page.on("response", async (response) => {
    try {
      received.push({ url: response.url(), body: (await response.body()).toString("base64") });
    } catch {
      // a stream cut when the page moved on has no body to read
    }
  });
  await page.goto(url);
  const panel = page.locator("#play"); // the Play panel: its controls found by their labels and names
  await panel.getByLabel("Name", { exact: true }).fill(name);
  await panel.getByRole("button", { name: "Register", exact: true }).click();
  await page.locator("#player-name").waitFor({ timeout: STEP_MS });
  await panel.getByRole("combobox", { name: /^Game\b/ }).selectOption(game);
  // named "Bot level search": the label, then the choice
  const chooser = panel.getByRole("combobox", { name: /^Bot level\b/ });
  const offered = await chooser.locator("option").evaluateAll((options) => options.map((o) => o.value));
  const preset = await chooser.inputValue();
  await chooser.selectOption(level);
  await chooser.focus();
  await page.keyboard.press("Tab"); // the next control after the level is the button
  const focused = await page.evaluate(() => document.activeElement?.textContent ?? "");
  await panel.screenshot({ path: join(out, "bot-panel.png") });
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => location.hash.startsWith("#match=") && !!document.querySelector(".board .player.me"), null, { timeout: STEP_MS });
  const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("tablehall:player")));
  const seat = await page.evaluate(() => document.querySelector(".player.me")?.getAttribute("data-seat") ?? "");
  const match = (await page.evaluate(() => location.hash)).slice("#match=".length);
  const header = await page.locator(".table-head .who").textContent();
  await page.screenshot({ path: join(out, "bot-seated.png"), fullPage: true });
  console.log(`SEATED ${JSON.stringify({ match, me: seat, key: stored.key, header, offered, preset, focused })}`);
  const go = await lines.next();
  if (go.done) throw new Error("the test closed standard input before the bot acted");
  const next = page.getByRole("button", { name: "Continue", exact: true });
  await next.focus();
  await page.keyboard.press("Enter");
  await page.waitForFunction(() => { const phase = document.querySelector(".board")?.getAttribute("data-phase"); return !!phase && phase !== "ready"; }, null, { timeout: STEP_MS });
  const phase = await page.locator(".board").getAttribute("data-phase");
  await page.screenshot({ path: join(out, "bot-past-ready.png"), fullPage: true });
  writeFileSync(join(out, "received.json"), JSON.stringify(received));
  console.log(`RESULT ${JSON.stringify({ match, me: seat, phase })}`);
} finally {
  await browser.close();
  process.stdin.destroy();
}
