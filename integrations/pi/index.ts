// baton-managed: baton's pi extension, installed by `baton install pi` or
// with baton's pi package (`pi install git:github.com/baton-agent/baton`);
// `baton uninstall pi` removes an installed copy. Edits are overwritten.
//
// pi has no hook configuration, so this extension calls the baton CLI on
// pi's events with one JSON-in/JSON-out entry point,
// `baton-hook <event> --harness pi` (or `baton hook <event> --harness pi`
// where the faster baton-hook is not installed; see docs/hooks.md):
//
//   session_start          -> session-start: record the session; the context
//                             it returns is added to the first prompt
//   tool_result (write,    -> post-tool-use: record the files pi changed
//     edit)
//   agent_before_settle    -> stop: the loop engine; a block becomes a user
//                             message and one more run, in every mode
//   session_before_compact -> pre-compact: write a draft packet first
//
// It also registers baton's MCP server (`baton mcp`) for the session,
// unless an mcp.json entry named baton (`baton install pi`) replaces it.
//
// Like every baton hook it fails open: if baton is missing, slow or
// broken, pi carries on as if the extension were not there, and says once
// how to install baton.
//
// Needs pi 0.87 or later (agent_before_settle); tested with pi 1.6.0.
import type { ExtensionAPI, ExtensionContext } from "@earendil-works/pi-coding-agent";
import { spawn } from "node:child_process";
import { dirname, join } from "node:path";

const BATON_BIN = process.env.BATON_BIN ?? "baton";

/** How long one baton call may take before it is abandoned. */
const TIMEOUT_MS = 30_000;

/**
 * How long the stop may take: it may run the loop's verify commands
 * (up to 10 minutes), as the other harnesses' Stop hooks allow (660 s).
 */
const STOP_TIMEOUT_MS = 660_000;

/** What to tell a user whose machine has no baton. */
const INSTALL_HINT =
  "baton's pi extension is installed but the baton binary is not on PATH, so it does nothing: install baton (https://github.com/baton-agent/baton#install, e.g. `npm install -g @baton-agent/baton`) and restart pi.";

/** baton's answer: `{"schema_version":1, ...}`. */
interface BatonAnswer {
  schema_version: number;
  context?: string;
  decision?: string;
  reason?: string;
  system_message?: string;
}

/** A way to run baton's hook: a program and the arguments before the event. */
interface Runner {
  program: string;
  prefix: string[];
}

/**
 * The ways to run baton's hook, fastest first: baton-hook (beside an
 * absolute BATON_BIN, else from PATH), then `baton hook`.
 */
function runners(): Runner[] {
  const hookBin = BATON_BIN.includes("/") ? join(dirname(BATON_BIN), "baton-hook") : "baton-hook";
  return [
    { program: hookBin, prefix: [] },
    { program: BATON_BIN, prefix: ["hook"] },
  ];
}

/** The runner that worked last; undefined until one has. */
let chosen: Runner | undefined;
/** Set once no runner could be started: baton is not installed. */
let missing = false;

type Outcome = { answer: BatonAnswer | undefined; notFound: boolean };

/** Runs one runner with payload on stdin. */
function runWith(r: Runner, event: string, payload: string, cwd: string): Promise<Outcome> {
  return new Promise((resolve) => {
    let out = "";
    let settled = false;
    const done = (o: Outcome) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(o);
      }
    };
    const child = spawn(r.program, [...r.prefix, event, "--harness", "pi"], { cwd, stdio: ["pipe", "pipe", "ignore"] });
    const timer = setTimeout(() => {
      child.kill();
      done({ answer: undefined, notFound: false });
    }, event === "stop" ? STOP_TIMEOUT_MS : TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      out += chunk;
    });
    child.on("error", (err: NodeJS.ErrnoException) => done({ answer: undefined, notFound: err.code === "ENOENT" || err.code === "EACCES" }));
    child.on("close", () => {
      try {
        const parsed: unknown = JSON.parse(out);
        done({ answer: typeof parsed === "object" && parsed !== null ? (parsed as BatonAnswer) : undefined, notFound: false });
      } catch {
        done({ answer: undefined, notFound: false });
      }
    });
    child.stdin.on("error", () => done({ answer: undefined, notFound: false }));
    child.stdin.end(payload);
  });
}

/** Runs baton's hook for event with payload on stdin. */
async function runHook(event: string, payload: Record<string, unknown>, cwd: string): Promise<BatonAnswer | undefined> {
  if (missing) return undefined;
  const body = JSON.stringify(payload);
  for (const r of chosen ? [chosen] : runners()) {
    const o = await runWith(r, event, body, cwd);
    if (!o.notFound) {
      chosen = r;
      return o.answer;
    }
  }
  if (!chosen) missing = true;
  return undefined;
}

/** The text of an assistant message, if it is one with text. */
function assistantText(m: unknown): string | undefined {
  const msg = m as { role?: unknown; content?: unknown };
  if (msg?.role !== "assistant") return undefined;
  if (typeof msg.content === "string") return msg.content;
  if (!Array.isArray(msg.content)) return undefined;
  const texts: string[] = [];
  for (const block of msg.content as { type?: unknown; text?: unknown }[]) {
    if (block?.type === "text" && typeof block.text === "string") texts.push(block.text);
  }
  return texts.length > 0 ? texts.join("\n") : undefined;
}

/** The text of the last assistant message among messages, if any. */
function lastAssistantText(messages: readonly unknown[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown };
    if (m?.role === "assistant") return assistantText(m);
  }
  return undefined;
}

function common(ctx: ExtensionContext): Record<string, unknown> {
  return {
    session_id: ctx.sessionManager.getSessionId(),
    transcript_path: ctx.sessionManager.getSessionFile(),
    cwd: ctx.cwd,
  };
}

export default function baton(pi: ExtensionAPI): void {
  // Context from session_start waits for the first prompt: pi has no
  // other way to hand text to the model before the user speaks.
  let pendingContext: string | undefined;
  // Whether the last stop was blocked with no user message since: baton
  // counts consecutive blocks as Claude Code's stop_hook_active says.
  let continuing = false;
  let hinted = false;

  if (typeof pi.registerMcpServer === "function") {
    pi.registerMcpServer("baton", {
      command: BATON_BIN,
      args: ["mcp"],
      description: "baton: handoff packets, pickup, loops and task briefs of this project's context store",
    });
  }

  pi.on("session_start", async (event, ctx) => {
    const source = event.reason === "new" ? "clear" : event.reason;
    const answer = await runHook("session-start", { ...common(ctx), hook_event_name: "session_start", source }, ctx.cwd);
    pendingContext = answer?.context?.trim() || undefined;
    if (missing && !hinted) {
      hinted = true;
      if (ctx.hasUI) ctx.ui.notify(INSTALL_HINT, "warning");
      else console.error(INSTALL_HINT);
    }
  });

  pi.on("input", () => {
    continuing = false;
  });

  pi.on("before_agent_start", () => {
    if (!pendingContext) return;
    const content = pendingContext;
    pendingContext = undefined;
    return { message: { customType: "baton", content, display: false } };
  });

  pi.on("tool_result", async (event, ctx) => {
    if (event.toolName !== "write" && event.toolName !== "edit") return;
    await runHook(
      "post-tool-use",
      { ...common(ctx), hook_event_name: "tool_result", tool_name: event.toolName, tool_input: event.input },
      ctx.cwd,
    );
  });

  // The last point where pi lets an extension ask for one more run, in
  // the TUI, RPC, print and JSON modes alike; agent_end is too early
  // (pi may still retry or compact) and cannot continue a print run.
  pi.on("agent_before_settle", async (event, ctx) => {
    if (event.outcome !== "completed") return;
    const payload: Record<string, unknown> = { ...common(ctx), hook_event_name: "agent_before_settle", stop_hook_active: continuing };
    const text = lastAssistantText(event.context.contextMessages);
    if (text !== undefined) payload.last_assistant_message = text;
    const answer = await runHook("stop", payload, ctx.cwd);
    if (answer?.system_message && ctx.hasUI) ctx.ui.notify(answer.system_message, "info");
    else if (answer?.system_message) console.error(answer.system_message);
    continuing = answer?.decision === "block" && !!answer.reason;
    if (!continuing || !answer?.reason) return;
    return {
      entries: [...event.entries, { type: "custom_message", customType: "baton-loop", content: answer.reason, display: true }],
      continue: true,
    };
  });

  pi.on("session_before_compact", async (event, ctx) => {
    // pi tells extensions nothing else about who asked: instructions come
    // only with a manual /compact, and their absence proves nothing (a
    // manual /compact without instructions looks like an automatic one),
    // so the trigger is left unknown then rather than guessed.
    const trigger = event.customInstructions ? "manual" : undefined;
    await runHook("pre-compact", { ...common(ctx), hook_event_name: "session_before_compact", ...(trigger ? { trigger } : {}) }, ctx.cwd);
    // Nothing returned: compaction goes ahead as pi planned it.
  });
}
