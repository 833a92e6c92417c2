// baton-managed: baton's pi extension, installed by `baton install pi`;
// `baton uninstall pi` removes it. Edits are overwritten on reinstall.
//
// pi has no hook configuration, so this extension calls the baton CLI on
// pi's events with one JSON-in/JSON-out entry point,
// `baton hook <event> --harness pi` (see docs/hooks.md):
//
//   session_start          -> session-start: record the session; the context
//                             it returns is added to the first prompt
//   tool_result (write,    -> post-tool-use: record the files pi changed
//     edit)
//   agent_end              -> stop: the loop engine; a block is sent back as
//                             a follow-up user message
//   session_before_compact -> pre-compact: write a draft packet first
//
// Like every baton hook it fails open: if baton is missing, slow or
// broken, pi carries on as if the extension were not there.
import type { ExtensionAPI, ExtensionContext } from "@mariozechner/pi-coding-agent";
import { spawn } from "node:child_process";

const BATON_BIN = process.env.BATON_BIN ?? "baton";

/** How long one baton call may take before it is abandoned. */
const TIMEOUT_MS = 30_000;

/** baton's answer: `{"schema_version":1, ...}`. */
interface BatonAnswer {
  schema_version: number;
  context?: string;
  decision?: string;
  reason?: string;
  system_message?: string;
}

/** Runs `baton hook <event> --harness pi` with payload on stdin. */
function runHook(event: string, payload: Record<string, unknown>, cwd: string): Promise<BatonAnswer | undefined> {
  return new Promise((resolve) => {
    let out = "";
    let settled = false;
    const done = (answer: BatonAnswer | undefined) => {
      if (!settled) {
        settled = true;
        clearTimeout(timer);
        resolve(answer);
      }
    };
    const child = spawn(BATON_BIN, ["hook", event, "--harness", "pi"], { cwd, stdio: ["pipe", "pipe", "ignore"] });
    const timer = setTimeout(() => {
      child.kill();
      done(undefined);
    }, TIMEOUT_MS);
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (chunk: string) => {
      out += chunk;
    });
    child.on("error", () => done(undefined));
    child.on("close", () => {
      try {
        const parsed: unknown = JSON.parse(out);
        done(typeof parsed === "object" && parsed !== null ? (parsed as BatonAnswer) : undefined);
      } catch {
        done(undefined);
      }
    });
    child.stdin.on("error", () => done(undefined));
    child.stdin.end(JSON.stringify(payload));
  });
}

/** The text of the last assistant message among messages, if any. */
function lastAssistantText(messages: readonly unknown[]): string | undefined {
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m?.role !== "assistant") continue;
    if (typeof m.content === "string") return m.content;
    if (!Array.isArray(m.content)) return undefined;
    const texts: string[] = [];
    for (const block of m.content as { type?: unknown; text?: unknown }[]) {
      if (block?.type === "text" && typeof block.text === "string") texts.push(block.text);
    }
    return texts.length > 0 ? texts.join("\n") : undefined;
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

  pi.on("session_start", async (event, ctx) => {
    const source = event.reason === "new" ? "clear" : event.reason;
    const answer = await runHook("session-start", { ...common(ctx), hook_event_name: "session_start", source }, ctx.cwd);
    pendingContext = answer?.context?.trim() || undefined;
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

  pi.on("agent_end", async (event, ctx) => {
    // Print and JSON modes (no UI) return as soon as the agent stops, so a
    // follow-up can never be sent there: baton then neither counts nor
    // binds the loop, and only a promise ends it.
    // Read ctx before awaiting: in print mode it goes stale once pi returns.
    const hasUI = ctx.hasUI;
    const payload: Record<string, unknown> = { ...common(ctx), hook_event_name: "agent_end", stop_hook_active: false, baton_cannot_block: !hasUI };
    const text = lastAssistantText(event.messages);
    if (text !== undefined) payload.last_assistant_message = text;
    const answer = await runHook("stop", payload, ctx.cwd);
    if (answer?.system_message && hasUI) ctx.ui.notify(answer.system_message, "info");
    else if (answer?.system_message) console.error(answer.system_message);
    if (answer?.decision === "block" && answer.reason) {
      // pi throws if a message is sent while it streams without deliverAs.
      pi.sendUserMessage(answer.reason, { deliverAs: "followUp" });
    }
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
