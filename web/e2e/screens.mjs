// Reference screenshots of the table's key states. Each case is one view (made by the rules engine, see
// tests/test_web_screens.py) drawn by the built page with no service (`window.tablehallShow`), at desktop
// (1280×800) and phone (390×844) sizes, after the taps a person makes to reach that state (a tile picked,
// a declaration's steps). Live clock digits are masked. Each picture is compared with its reference image,
// pixel by pixel, in the browser itself (a canvas): a pixel differs when a colour channel moves by more than
// 48 of 255; the share of differing pixels is reported, with a picture of where they are.
//
//   node e2e/screens.mjs URL CASES.json OUT_DIR REFS_DIR [update]
//     update: write the new pictures into REFS_DIR instead of comparing (TABLEHALL_UPDATE_WEB_REFS=1)
// Prints `SCREENS [{name, width, height, differing, total, status}]`.
import { chromium } from "playwright-core";
import { existsSync, mkdirSync, readFileSync, writeFileSync, copyFileSync } from "node:fs";
import { join } from "node:path";

const [url, casesFile, out, refs, update = ""] = process.argv.slice(2);
const cases = JSON.parse(readFileSync(casesFile, "utf8"));
mkdirSync(out, { recursive: true });
const SIZES = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--font-render-hinting=none"],
});

/** The taps that reach a case's state, as a person makes them. */
async function reach(page, steps) {
  for (const step of steps ?? []) {
    if (step === "pick-tile") await page.locator(".hand-tile.legal").first().click();
    else if (step === "trump") await page.locator("button[data-trump]").first().click();
    else if (step === "target") await page.locator("button[data-step=target]").click();
    else if (step === "give-two") {
      const cards = page.locator(".hand-card:not([disabled])");
      const n = await cards.count();
      await cards.nth(n - 1).click();
      await cards.nth(n - 2).click();
    } else throw new Error(`unknown step ${step}`);
  }
}

async function compare(page, fresh, reference, diffPath) {
  const result = await page.evaluate(
    async ([a, b]) => {
      const load = (src) => new Promise((resolve, reject) => { const img = new Image(); img.onload = () => resolve(img); img.onerror = reject; img.src = src; });
      const [x, y] = await Promise.all([load(a), load(b)]);
      if (x.width !== y.width || x.height !== y.height) return { differing: x.width * x.height, total: x.width * x.height, size: `${x.width}×${x.height} vs ${y.width}×${y.height}` };
      const pixels = (img) => { const c = new OffscreenCanvas(img.width, img.height); const g = c.getContext("2d"); g.drawImage(img, 0, 0); return g.getImageData(0, 0, img.width, img.height).data; };
      const p = pixels(x), q = pixels(y);
      const diff = new OffscreenCanvas(x.width, x.height);
      const g = diff.getContext("2d");
      const image = g.createImageData(x.width, x.height);
      let differing = 0;
      for (let i = 0; i < p.length; i += 4) {
        const moved = Math.max(Math.abs(p[i] - q[i]), Math.abs(p[i + 1] - q[i + 1]), Math.abs(p[i + 2] - q[i + 2]));
        const off = moved > 48;
        if (off) differing += 1;
        image.data[i] = off ? 255 : p[i] / 3;
        image.data[i + 1] = off ? 0 : p[i + 1] / 3;
        image.data[i + 2] = off ? 0 : p[i + 2] / 3;
        image.data[i + 3] = 255;
      }
      g.putImageData(image, 0, 0);
      const blob = await diff.convertToBlob({ type: "image/png" });
      const bytes = new Uint8Array(await blob.arrayBuffer());
      let binary = "";
      for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
      return { differing, total: p.length / 4, diff: btoa(binary) };
    },
    [`data:image/png;base64,${fresh.toString("base64")}`, `data:image/png;base64,${readFileSync(reference).toString("base64")}`],
  );
  if (result.diff) writeFileSync(diffPath, Buffer.from(result.diff, "base64"));
  return result;
}

const report = [];
try {
  for (const [size, viewport] of Object.entries(SIZES)) {
    const page = await browser.newPage({ viewport, deviceScaleFactor: 1, isMobile: size === "phone", hasTouch: size === "phone" });
    page.on("pageerror", (error) => console.error(`page error: ${error.message}`));
    await page.goto(url);
    await page.waitForFunction(() => typeof window.tablehallShow === "function");
    await page.addStyleTag({ content: "*, *::before { transition: none !important; animation: none !important; caret-color: transparent !important; }" });
    for (const c of cases) {
      const name = `${c.name}-${size}`;
      await page.evaluate(([view, names, previous]) => window.tablehallShow(view, names, previous), [c.view, c.names, c.previous ?? null]);
      await reach(page, c.steps);
      await page.evaluate(() => window.scrollTo(0, 0));
      const picture = await page.screenshot({ fullPage: true, mask: [page.locator(".clock, .delay")], maskColor: "#777777" });
      const fresh = join(out, `${name}.png`);
      writeFileSync(fresh, picture);
      const reference = join(refs, `${name}.png`);
      if (update) {
        copyFileSync(fresh, reference);
        report.push({ name, status: "updated" });
      } else if (!existsSync(reference)) report.push({ name, status: "missing" });
      else {
        const r = await compare(page, picture, reference, join(out, `${name}-diff.png`));
        report.push({ name, status: "compared", differing: r.differing, total: r.total, size: r.size ?? null });
      }
    }
    await page.close();
  }
  console.log(`SCREENS ${JSON.stringify(report)}`);
} catch (error) {
  console.error(`screens failed: ${error.stack ?? error}`);
  process.exitCode = 1;
} finally {
  await browser.close();
}
