// `npm run build` writes dist/, which the gateway's HTTP door serves at `/`. `npm run dev` serves the
// page with hot reload and forwards the API to a running `tablehall serve` (TABLEHALL_WEB_URL).
import { defineConfig } from "vite";

const gateway = process.env.TABLEHALL_WEB_URL ?? "http://127.0.0.1:8080";

export default defineConfig({
  build: { outDir: "dist", emptyOutDir: true, target: "es2022" },
  server: { proxy: { "/tablehall.v1.": { target: gateway, changeOrigin: true } } },
});
