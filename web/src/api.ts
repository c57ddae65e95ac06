// The page's one way to the service: tablehall.v1.Matches over Connect (default) or gRPC-Web
// (`?protocol=grpc-web`), on the same origin that served the page. Actions are written as record
// events ({"do": "play", "tile": "6-4", "end": "E"}), exactly as the views list them in `legal`.
import { Code, ConnectError, createClient, type Client } from "@connectrpc/connect";
import { createConnectTransport, createGrpcWebTransport } from "@connectrpc/connect-web";
import { type Action } from "./gen/protos/tablehall/v1/actions_pb";
import { Matches, ViewFormat, type Update } from "./gen/protos/tablehall/v1/matches_pb";

export type View = Record<string, any>;

/** The page reads view_json (matches.proto, deprecated: its last release) and asks for it alone. */
const JSON_VIEWS = ViewFormat.JSON;
export type Act = Record<string, any> & { do: string };

export const protocol = new URLSearchParams(location.search).get("protocol") === "grpc-web" ? "grpc-web" : "connect";

export const transport =
  protocol === "grpc-web"
    ? createGrpcWebTransport({ baseUrl: location.origin, useBinaryFormat: true })
    : createConnectTransport({ baseUrl: location.origin, useBinaryFormat: true });

export const matches: Client<typeof Matches> = createClient(Matches, transport);

export function auth(token: string | null): { headers?: Record<string, string> } {
  return token ? { headers: { authorization: `Bearer ${token}` } } : {};
}

/** A record-style action as the typed wire message. */
export function actionMessage(action: Act): Action {
  const { do: kind, ...fields } = action;
  switch (kind) {
    case "play":
      return { kind: { case: "play", value: { tile: fields.tile ?? "", end: fields.end ?? "", card: fields.card ?? "", marriage: !!fields.marriage } } } as Action;
    case "bid":
    case "raise":
      return { kind: { case: kind, value: { amount: Number(fields.amount) } } } as Action;
    case "declare": {
      const give: Record<number, string> = {};
      for (const [seat, card] of Object.entries(fields.give ?? {})) give[Number(seat)] = String(card);
      return { kind: { case: "declare", value: { trump: fields.trump, target: Number(fields.target), give } } } as Action;
    }
    case "ready":
    case "reveal":
    case "draw":
    case "accept":
    case "decline":
    case "resign":
    case "look":
    case "pass":
    case "abandon":
      return { kind: { case: kind, value: {} } } as Action;
    default:
      throw new Error(`unknown action ${kind}`);
  }
}

export async function act(matchId: string, token: string, action: Act): Promise<{ seq: bigint; view: View }> {
  const reply = await matches.act({ matchId, action: actionMessage(action), views: JSON_VIEWS }, auth(token));
  return { seq: reply.seq, view: JSON.parse(reply.viewJson) };
}

export async function getView(matchId: string, token: string | null): Promise<{ seq: bigint; view: View }> {
  const update = await matches.getView({ matchId, views: JSON_VIEWS }, auth(token));
  return { seq: update.seq, view: JSON.parse(update.viewJson) };
}

/** The seat's updates after `afterSeq`, until the match ends or `signal` aborts. */
export function watch(matchId: string, token: string | null, afterSeq: bigint, signal: AbortSignal): AsyncIterable<Update> {
  return matches.watch({ matchId, afterSeq, views: JSON_VIEWS }, { ...auth(token), signal });
}

const HEADLINES: Partial<Record<Code, string>> = {
  [Code.InvalidArgument]: "That is not a valid request",
  [Code.FailedPrecondition]: "Not allowed now",
  [Code.NotFound]: "Not found",
  [Code.Unauthenticated]: "That token is no seat of this match",
  [Code.PermissionDenied]: "Not your seat",
  [Code.Unavailable]: "The service is unavailable; try again",
  [Code.Internal]: "The service failed (it logged why)",
};

/** A refusal as a player reads it: a headline for its status, the service's own message, its code. */
export function explain(error: unknown): string {
  const err = ConnectError.from(error);
  if (err.code === Code.Canceled) return "cancelled";
  const code = err.metadata.get("tablehall-error");
  const headline = HEADLINES[err.code] ?? Code[err.code];
  return `${headline}: ${err.rawMessage}${code ? ` (${code})` : ""}`;
}

export function errorCode(error: unknown): Code {
  return ConnectError.from(error).code;
}
