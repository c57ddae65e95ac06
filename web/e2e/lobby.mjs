// Two people in two browsers (two Chromium contexts: separate local storage) end up at the same table:
// each registers a name on the page and exports its key; then (mode `queue`) both pick the game and press
// Play and the Lobby seats them together, or (mode `link`) the first presses "Invite a friend" and the
// second opens the link it shows and takes the seat. Each page opens the table (its own seat drawn).
// Prints `RESULT {...}` with what each page shows; saves screenshots and every response body received.
//
//   node e2e/lobby.mjs URL OUT_DIR NAME_A NAME_B [GAME] [queue|link]
import { chromium } from "playwright-core";
import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out, nameA, nameB, game = "spectacular-bid", mode = "queue"] = process.argv.slice(2);
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
  let address = url;
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
    await page.goto(address);
    if (mode === "link" && pages.length === 1) await page.locator("#invited").waitFor({ timeout: STEP_MS });
    await page.locator("input[name=player-name]").fill(name);
    await page.locator("#register").click();
    await page.locator("#player-name").waitFor({ timeout: STEP_MS });
    const [download] = await Promise.all([page.waitForEvent("download"), page.locator("#export-key").click()]);
    const exported = await page.locator("#exported-key").inputValue();
    const stored = await page.evaluate(() => JSON.parse(localStorage.getItem("tablehall:player")));
    await page.locator("select[name=play-game]").selectOption(game);
    pages.push({ name, page, exported, stored, file: download.suggestedFilename() });
    if (mode === "link" && pages.length === 1) {
      await page.locator("#invite").click();
      await page.waitForFunction(() => document.querySelector("#invite-link")?.value, null, { timeout: STEP_MS });
      address = await page.locator("#invite-link").inputValue(); // the link a friend is sent
    }
  }
  if (mode === "link") await pages[1].page.locator("#take-challenge").click();
  else for (const { page } of pages) await page.locator("#play-button").click(); // both press Play
  const shown = [];
  for (const { name, page, exported, stored, file } of pages) {
    await page.waitForFunction(() => location.hash.startsWith("#match=") && !!document.querySelector(".board .player.me"), null, { timeout: STEP_MS });
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
