// Generates src/gen/ from ../protos with protoc-gen-es (TypeScript). protoc is grpcio-tools' (the
// project's Python environment: ../.venv, or $PYTHON), so nothing else needs installing.
import { execFileSync } from "node:child_process";
import { existsSync, mkdirSync, readdirSync, rmSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const web = resolve(dirname(fileURLToPath(import.meta.url)), "..");
const root = resolve(web, "..");
const venv = join(root, ".venv", "bin", "python");
const python = process.env.PYTHON ?? (existsSync(venv) ? venv : "python3");
const plugin = join(web, "node_modules", ".bin", "protoc-gen-es");
const out = join(web, "src", "gen");
const protos = readdirSync(join(root, "protos", "tablehall", "v1"))
  .filter((name) => name.endsWith(".proto") && name !== "host.proto") // host.proto is internal
  .map((name) => join("protos", "tablehall", "v1", name));

rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
execFileSync(
  python,
  ["-m", "grpc_tools.protoc", `-I${root}`, `--plugin=protoc-gen-es=${plugin}`, `--es_out=${out}`, "--es_opt=target=ts", ...protos],
  { cwd: root, stdio: "inherit" },
);
console.log(`generated ${protos.join(", ")} into src/gen/`);
