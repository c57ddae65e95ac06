// Tournament pages end to end in a real browser (Debian's Chromium, driven by playwright-core), run by
// tests/test_web_tournament.py: the organizer creates a tournament from a pasted player list on #/organize
// (prints `CREATED {...}` with the players' tokens, for the bots the test starts), a spectator opens the
// public page, follows the link of the live table and watches it to its end (every state the page showed,
// with the browser's clock when it showed it: `SHOWN {...}`), the organizer starts round 2 from the
// public page (`ROUND {...}`) and exports the records as a download (`EXPORTED {...}`), and each player's
// own page, open from before round 2, showed their round-2 table with the button that takes them there, or
// their bye, and then the end (`PLAYER {...}`).
//
//   node e2e/tournament.mjs URL OUT_DIR ORGANIZER_KEY
import { chromium } from "playwright-core";
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";

const [url, out, key] = process.argv.slice(2);
if (!url || !out || !key) {
  console.error("usage: node e2e/tournament.mjs URL OUT_DIR ORGANIZER_KEY");
  process.exit(2);
}
mkdirSync(out, { recursive: true });
const PLAYERS = ["Ana", "Bia", "Caio"];
const WAIT_MS = 120_000;
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});
const say = (tag, value) => console.log(`${tag} ${JSON.stringify(value)}`);

try {
  // the organizer: a tournament from a pasted list, manual rounds, spectators 5 s late
  const organizer = await (await browser.newContext({ acceptDownloads: true })).newPage();
  await organizer.goto(`${url}#/organize`);
  await organizer.fill("input[name=key]", key);
  await organizer.fill("input[name=name]", "Browser cup");
  await organizer.fill("textarea[name=players]", PLAYERS.join("\n"));
  await organizer.fill("input[name=rounds]", "2");
  await organizer.fill("input[name=points]", "20");
  await organizer.fill("input[name=delay]", "5");
  await organizer.fill("input[name=pause]", "0");
  await organizer.check("input[name=manual]");
  await organizer.click("#organize button[type=submit]");
  const created = await organizer.waitForSelector("[data-created]", { timeout: WAIT_MS });
  const tournament = await created.getAttribute("data-created");
  const tokens = await organizer.$$eval("li[data-token]", (items) => Object.fromEntries(items.map((li) => [li.dataset.player, li.dataset.token])));
  await organizer.screenshot({ path: join(out, "organize.png"), fullPage: true });
  say("CREATED", { tournament, players: tokens });

  // a spectator: the public page, then the live table's watch link
  const spectator = await (await browser.newContext()).newPage();
  await spectator.addInitScript(() => {
    const shown = [];
    Object.assign(window, { tablehallShown: shown });
    new MutationObserver((records) => {
      for (const r of records) {
        const el = r.target;
        if (el.classList?.contains("board") && el.dataset.seq) shown.push({ seq: Number(el.dataset.seq), at: Date.now(), phase: el.dataset.phase ?? "" });
      }
    }).observe(document, { attributes: true, subtree: true, attributeFilter: ["data-seq"] });
  });
  await spectator.goto(`${url}#/t/${tournament}`);
  const watch = await spectator.waitForSelector("a[data-watch]", { timeout: WAIT_MS });
  const match = await watch.getAttribute("data-watch");
  await spectator.screenshot({ path: join(out, "public-page.png"), fullPage: true });
  await spectator.click(`a[data-watch="${match}"]`); // the page is redrawn on every push: found again
  await spectator.waitForFunction(() => document.getElementById("connection")?.textContent === "match over", null, { timeout: WAIT_MS });
  await spectator.screenshot({ path: join(out, "spectator-end.png"), fullPage: true });
  say("SHOWN", { match, shown: await spectator.evaluate(() => window.tablehallShown) });

  // each player's own page, open before round 2: every assignment it shows is kept (pushed, never polled)
  const pages = {};
  for (const [name, token] of Object.entries(tokens)) {
    const page = await (await browser.newContext()).newPage();
    await page.addInitScript(() => {
      const seen = [];
      Object.assign(window, { tablehallAssignments: seen });
      new MutationObserver(() => {
        const el = document.querySelector("[data-assignment]");
        const go = document.querySelector("[data-go]");
        const round = Number(document.querySelector("h2[data-round]")?.getAttribute("data-round") ?? 0);
        const shown = { status: el?.getAttribute("data-assignment"), round, go: go?.getAttribute("data-go") ?? null, href: go?.getAttribute("href") ?? null };
        const last = seen[seen.length - 1];
        if (el && JSON.stringify(last) !== JSON.stringify(shown)) seen.push(shown);
      }).observe(document, { childList: true, subtree: true });
    });
    await page.goto(`${url}#/t/${tournament}/me?token=${token}`);
    await page.waitForSelector("[data-assignment]", { timeout: WAIT_MS });
    pages[name] = page;
  }

  // the organizer starts round 2 from the public page, then exports the records
  await organizer.goto(`${url}#/t/${tournament}`);
  await organizer.waitForSelector('[data-round="1"][data-round-status="ended"]', { timeout: WAIT_MS });
  await organizer.click('[data-do="next-round"]');
  await organizer.waitForSelector('[data-round="2"]', { timeout: WAIT_MS });
  const round2 = await organizer.$$eval('[data-round="2"] li[data-match]', (items) => items.map((li) => li.dataset.match));
  await organizer.screenshot({ path: join(out, "round-2.png"), fullPage: true });
  say("ROUND", { round: 2, tables: round2 });
  const download = organizer.waitForEvent("download", { timeout: WAIT_MS });
  await organizer.click('[data-do="export"]');
  const file = join(out, "records.json");
  await (await download).saveAs(file);
  say("EXPORTED", { records: JSON.parse(readFileSync(file, "utf8")).records.length });

  // every player's page followed the tournament to its end
  const players = {};
  for (const [name, page] of Object.entries(pages)) {
    await page.waitForSelector('[data-assignment="finished"]', { timeout: WAIT_MS });
    await page.screenshot({ path: join(out, `player-${name}.png`), fullPage: true });
    players[name] = { address: page.url(), seen: await page.evaluate(() => window.tablehallAssignments) };
  }
  say("PLAYER", players);
} catch (error) {
  console.error(String(error?.stack ?? error));
  process.exitCode = 1;
} finally {
  await browser.close();
}
