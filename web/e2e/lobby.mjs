// Two people press "Play" in two browsers (two Chromium contexts: separate local storage) and end up at
// the same table: each registers a name on the page, exports its key, picks the game and presses Play;
// the Lobby seats them together and each page opens the table (its board drawn with its own seat).
// Prints `RESULT {...}` with what each page shows; saves screenshots and every response body received.
//
//   node e2e/lobby.mjs URL OUT_DIR NAME_A NAME_B [GAME]
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out, nameA, nameB, game = "spectacular-bid"] = process.argv.slice(2);
if (!url || !out || !nameA || !nameB) {
  console.error("usage: node e2e/lobby.mjs URL OUT_DIR NAME_A NAME_B [GAME]");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const STEP_MS = 30_000;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"],
});
const received = [];
try {
  const pages = [];
  for (const name of [nameA, nameB]) {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, acceptDownloads: true });
    const page = await context.newPage();
    page.on("response", async (response) => {
      try {
        received.push({ page: name, url: response.url(), body: (await response.body()).toString("base64") });
      } catch {
        // a stream cut when the page moved on has no body to read
      }
    });
    await page.goto(url);
    await page.locator("input[name=player-name]").fill(name);
    await page.locator("#register").click();
    await page.locator("#player-name").waitFor({ timeout: STEP_MS });
    const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#export-key").click()]);
    const exported = await page.locator("#exported-key").inputValue();
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("tablehall:player")));
    await page.locator("select[name=play-game]").selectOption(game);
    pages.push({ name, page, exported, stored, file: download.suggestedFilename() });
  }
  for (const { page } of pages) await page.locator("#play-button").click(); // both press Play
  const shown = [];
  for (const { name, page, exported, stored, file } of pages) {
    await page.waitForFunction(() => location.hash.startsWith("#match=") && !!document.querySelector(".board"), null, { timeout: STEP_MS });
    const seat = await page.evaluate(() => document.querySelector(".player.me")?.getAttribute("data-seat") ?? "");
    const hash = await page.evaluate(() => location.hash);
    await page.screenshot({ path: join(out, `lobby-${name}.png`), fullPage: true });
    shown.push({ name, match: hash.slice("#match=".length), me: seat, exported, stored, file });
  }
  writeFileSync(join(out, "received.json"), JSON.stringify(received));
  console.log(`RESULT ${JSON.stringify({ pages: shown })}`);
} finally {
  await browser.close();
}
