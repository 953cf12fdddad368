#!/usr/bin/env python3
"""A scripted model server on loopback for the live host tests.

Speaks just enough of three APIs for the hosts to run headless:
  - Anthropic Messages (POST /v1/messages, SSE or JSON)       Claude Code,
                                                              Copilot CLI
  - OpenAI Responses (POST .../responses, SSE)                Codex CLI
  - Gemini (POST .../models/M:streamGenerateContent|generateContent)  Gemini CLI

The script (a JSON file) is a list of steps; step N is the model's answer
after N tool results are in the conversation, so the server keeps no state
and every host's retries and side requests get a consistent answer. A step:
  {"shell": "CMD"}                      call the host's shell tool with CMD
  {"shell": "CMD", "background": true}  the same, in the background
  {"write": "PATH", "content": "TEXT"}  call the host's file-writing tool
                                        (Copilot: create, a new file)
  {"edit": "PATH", "old": "A", "new": "B"}  Copilot: its edit tool
  {"read": "PATH"}                      Claude, Gemini, Copilot: the file-reading tool
  {"patch": "TEXT"}                     Codex: apply_patch with this patch
  {"mcp": "TOOL", "args": {...}}        Claude: the tool of the MCP server named
                                        airlock (mcp__airlock__TOOL)
  {"call": "TOOL", "args": {...}}       Gemini: its tool TOOL with these args
After the last step the model answers with text and ends its turn.

Every request is appended to LOG (one JSON object a line: path, body) so
the tests can read what the host told the model, e.g. a tool's result.

usage: mock_model.py SCRIPT LOG PORTFILE
"""
import json
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

SCRIPT_PATH, LOG_PATH, PORT_PATH = sys.argv[1:4]
LOCK = threading.Lock()


def load_script():
    with open(SCRIPT_PATH, encoding="utf-8") as f:
        return json.load(f)


def log(path, body):
    with LOCK, open(LOG_PATH, "a", encoding="utf-8") as f:
        f.write(json.dumps({"path": path, "body": body}) + "\n")


FINAL_TEXT = "All done."


# --- Anthropic Messages (Claude Code) ------------------------------------

def claude_count_results(body):
    n = 0
    for m in body.get("messages", []):
        if isinstance(m.get("content"), list):
            n += sum(1 for b in m["content"] if b.get("type") == "tool_result")
    return n


def claude_block(step, n):
    tid = "toolu_%02d%s" % (n, "0" * 20)
    if "shell" in step:
        inp = {"command": step["shell"], "description": "scripted step %d" % n}
        if step.get("background"):
            inp["run_in_background"] = True
        return {"type": "tool_use", "id": tid, "name": "Bash", "input": inp}
    if "write" in step:
        return {"type": "tool_use", "id": tid, "name": "Write",
                "input": {"file_path": step["write"], "content": step.get("content", "")}}
    if "read" in step:
        return {"type": "tool_use", "id": tid, "name": "Read",
                "input": {"file_path": step["read"]}}
    if "mcp" in step:
        return {"type": "tool_use", "id": tid, "name": "mcp__airlock__" + step["mcp"],
                "input": step.get("args", {})}
    raise ValueError("step %r has nothing for Claude" % step)


# Copilot CLI speaks the same Messages API (COPILOT_PROVIDER_TYPE=anthropic)
# and is told apart by its tools' names: bash, create, edit, view.
def copilot_block(step, n):
    tid = "toolu_%02d%s" % (n, "1" * 20)
    if "shell" in step:
        inp = {"command": step["shell"], "description": "scripted step %d" % n}
        if step.get("background"):
            inp["mode"] = "async"
        return {"type": "tool_use", "id": tid, "name": "bash", "input": inp}
    if "write" in step:
        return {"type": "tool_use", "id": tid, "name": "create",
                "input": {"path": step["write"], "file_text": step.get("content", "")}}
    if "edit" in step:
        return {"type": "tool_use", "id": tid, "name": "edit",
                "input": {"path": step["edit"], "old_str": step.get("old", ""),
                          "new_str": step.get("new", "")}}
    if "read" in step:
        return {"type": "tool_use", "id": tid, "name": "view", "input": {"path": step["read"]}}
    raise ValueError("step %r has nothing for Copilot" % step)


def claude_reply(body):
    tools = [t.get("name") for t in body.get("tools", []) or []]
    script = load_script()
    n = claude_count_results(body)
    if "Bash" in tools and n < len(script):
        block = claude_block(script[n], n)
        stop = "tool_use"
    elif "bash" in tools and n < len(script):
        block = copilot_block(script[n], n)
        stop = "tool_use"
    else:
        block = {"type": "text", "text": FINAL_TEXT}
        stop = "end_turn"
    msg = {"id": "msg_%02d" % n, "type": "message", "role": "assistant",
           "model": body.get("model", "mock"), "content": [block],
           "stop_reason": stop, "stop_sequence": None,
           "usage": {"input_tokens": 10, "output_tokens": 5,
                     "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}}
    if not body.get("stream"):
        return "application/json", json.dumps(msg).encode()
    events = []

    def ev(kind, data):
        events.append("event: %s\ndata: %s\n\n" % (kind, json.dumps(data)))
    start = dict(msg, content=[], stop_reason=None)
    start["usage"] = dict(msg["usage"], output_tokens=1)
    ev("message_start", {"type": "message_start", "message": start})
    if block["type"] == "text":
        ev("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": {"type": "text", "text": ""}})
        ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "text_delta", "text": block["text"]}})
    else:
        ev("content_block_start", {"type": "content_block_start", "index": 0,
                                   "content_block": dict(block, input={})})
        ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                   "delta": {"type": "input_json_delta",
                                             "partial_json": json.dumps(block["input"])}})
    ev("content_block_stop", {"type": "content_block_stop", "index": 0})
    ev("message_delta", {"type": "message_delta",
                         "delta": {"stop_reason": stop, "stop_sequence": None},
                         "usage": {"output_tokens": 5}})
    ev("message_stop", {"type": "message_stop"})
    return "text/event-stream", "".join(events).encode()


# --- OpenAI Responses (Codex) ---------------------------------------------

def codex_tool_names(body):
    names = []
    for t in body.get("tools", []) or []:
        names.append(t.get("name") or t.get("type"))
    return names


def codex_item(step, n, tools):
    call_id = "call_%02d" % n
    if "shell" in step:
        cmd = step["shell"]
        if "shell_command" in tools:
            return {"type": "function_call", "name": "shell_command", "call_id": call_id,
                    "arguments": json.dumps({"command": cmd})}
        if "exec_command" in tools:
            return {"type": "function_call", "name": "exec_command", "call_id": call_id,
                    "arguments": json.dumps({"cmd": cmd})}
        return {"type": "function_call", "name": "shell", "call_id": call_id,
                "arguments": json.dumps({"command": ["bash", "-lc", cmd]})}
    if "patch" in step:
        return {"type": "custom_tool_call", "name": "apply_patch", "call_id": call_id,
                "input": step["patch"]}
    raise ValueError("step %r has nothing for Codex" % step)


def codex_reply(body):
    script = load_script()
    n = sum(1 for i in body.get("input", []) or []
            if isinstance(i, dict) and i.get("type") in ("function_call_output",
                                                         "custom_tool_call_output"))
    tools = codex_tool_names(body)
    if n < len(script) and tools:
        item = codex_item(script[n], n, tools)
    else:
        item = {"type": "message", "role": "assistant", "id": "msg_%02d" % n,
                "content": [{"type": "output_text", "text": FINAL_TEXT}]}
    rid = "resp_%02d" % n
    out = []

    def ev(data):
        out.append("event: %s\ndata: %s\n\n" % (data["type"], json.dumps(data)))
    ev({"type": "response.created", "response": {"id": rid}})
    ev({"type": "response.output_item.done", "output_index": 0, "item": item})
    ev({"type": "response.completed",
        "response": {"id": rid, "usage": {"input_tokens": 10, "input_tokens_details": None,
                                          "output_tokens": 5, "output_tokens_details": None,
                                          "total_tokens": 15}}})
    return "text/event-stream", "".join(out).encode()


# --- Gemini ---------------------------------------------------------------

def gemini_reply(path, body):
    script = load_script()
    tools = []
    for t in body.get("tools", []) or []:
        for d in t.get("functionDeclarations", []) or []:
            tools.append(d.get("name"))
    n = 0
    for c in body.get("contents", []) or []:
        n += sum(1 for p in c.get("parts", []) or [] if "functionResponse" in p)
    if n < len(script) and "run_shell_command" in tools:
        step = script[n]
        if "shell" in step:
            args = {"command": step["shell"], "description": "scripted step %d" % n}
            if step.get("background"):
                args["is_background"] = True
            part = {"functionCall": {"name": "run_shell_command", "args": args}}
        elif "write" in step:
            part = {"functionCall": {"name": "write_file",
                                     "args": {"file_path": step["write"],
                                              "content": step.get("content", "")}}}
        elif "read" in step:
            part = {"functionCall": {"name": "read_file",
                                     "args": {"file_path": step["read"]}}}
        elif "call" in step:
            part = {"functionCall": {"name": step["call"], "args": step.get("args", {})}}
        else:
            raise ValueError("step %r has nothing for Gemini" % step)
    elif "responseSchema" in json.dumps(body.get("generationConfig", {})) or \
            body.get("generationConfig", {}).get("responseMimeType") == "application/json":
        # a side request wanting JSON (next speaker, routing): the model is done
        part = {"text": json.dumps({"reasoning": "done", "next_speaker": "user",
                                    "model_choice": "flash",
                                    "complexity_reasoning": "simple"})}
    else:
        part = {"text": FINAL_TEXT}
    chunk = {"candidates": [{"content": {"role": "model", "parts": [part]},
                             "finishReason": "STOP", "index": 0}],
             "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 5,
                               "totalTokenCount": 15},
             "modelVersion": "mock"}
    if "streamGenerateContent" in path:
        return "text/event-stream", ("data: %s\r\n\r\n" % json.dumps(chunk)).encode()
    return "application/json", json.dumps(chunk).encode()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def send(self, code, ctype, data):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):
        log(self.path, None)
        if "/models" in self.path:
            self.send(200, "application/json", json.dumps(
                {"data": [], "models": [], "object": "list"}).encode())
            return
        self.send(404, "application/json", b'{"error":"not here"}')

    def do_HEAD(self):
        self.send(200, "text/plain", b"")

    def do_POST(self):
        n = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(n) if n else b""
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = {"_raw": raw.decode("utf-8", "replace")}
        log(self.path, body)
        p = self.path.split("?")[0]
        try:
            if p.endswith("/messages/count_tokens"):
                self.send(200, "application/json", b'{"input_tokens":10}')
            elif p.endswith("/messages"):
                self.send(200, *claude_reply(body))
            elif p.endswith("/responses"):
                self.send(200, *codex_reply(body))
            elif ":countTokens" in p:
                self.send(200, "application/json", b'{"totalTokens":10}')
            elif "GenerateContent" in p or "generateContent" in p:
                self.send(200, *gemini_reply(p, body))
            else:
                self.send(404, "application/json", b'{"error":"not here"}')
        except Exception as e:  # the test reads the log; the host sees a 500
            log("error", {"error": repr(e)})
            self.send(500, "application/json", json.dumps({"error": repr(e)}).encode())


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    with open(PORT_PATH + ".new", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(PORT_PATH + ".new", PORT_PATH)
    server.serve_forever()


if __name__ == "__main__":
    main()
