// Feeds a `gpumemrec export --format chrome-trace` file to Chrome DevTools'
// own trace engine (npm @paulirish/trace_engine: the Performance panel's
// models/trace, published standalone) and checks what it finds:
//  - trace bounds: the engine's min/max equal those of the file's B/E/X/I
//    events (MetaHandler counts only those phases, and skips ts 0);
//  - the calls: every "X" event of our process is an entry of its thread in
//    the engine's RendererHandler, and every "I" instant too.
//
//   node check_trace_engine.mjs ENGINE_DIR TRACE.json
// ENGINE_DIR is where the package was installed (node_modules inside).
// Exit 0 pass, 1 fail.
import fs from 'node:fs';
import path from 'node:path';
import {pathToFileURL} from 'node:url';

const [engineDir, traceFile] = process.argv.slice(2);
const pkg = path.join(engineDir, 'node_modules', '@paulirish', 'trace_engine');
const {polyfillDOMRect} = await import(pathToFileURL(path.join(pkg, 'analyze-trace.mjs')).href);
const Trace = await import(pathToFileURL(path.join(pkg, 'models', 'trace', 'trace.js')).href);
polyfillDOMRect();  // the engine expects a browser's DOMRect

function fail(msg) {
  console.log('FAIL: ' + msg);
  process.exit(1);
}

const file = JSON.parse(fs.readFileSync(traceFile, 'utf8'));
const events = file.traceEvents;
if (!Array.isArray(events)) fail('no traceEvents array');
const timed = events.filter(e => ['B', 'E', 'X', 'I'].includes(e.ph));
const calls = events.filter(e => e.ph === 'X');
const instants = events.filter(e => e.ph === 'I');
if (calls.length === 0) fail('no complete events in the file');
if (events.some(e => 'ts' in e && !(e.ts > 0))) fail('a ts is not > 0 (the engine reads ts 0 as no time)');
// Only phases the engine understands for our purpose: a lowercase "i" (the
// format's older instant) is parsed but never counted for the bounds.
const phases = new Set(events.map(e => e.ph));
for (const ph of phases) if (!['M', 'X', 'I', 'C'].includes(ph)) fail(`unexpected phase "${ph}"`);
const wantMin = Math.min(...timed.map(e => e.ts));
const wantMax = Math.max(...timed.map(e => e.ts + (e.dur ?? 0)));

// The copy of the events the engine keeps is its own; give it a fresh one.
const model = Trace.TraceModel.Model.createWithAllHandlers();
await model.parse(JSON.parse(JSON.stringify(events)));
const parsed = model.parsedTrace();
if (!parsed) fail('the engine returned no parsed trace');
const data = parsed.data ?? parsed;  // the layout moved between versions
const bounds = data.Meta.traceBounds;
console.log(`engine bounds: min ${bounds.min} max ${bounds.max} range ${bounds.range}`);
if (!Number.isFinite(bounds.min) || !Number.isFinite(bounds.max)) fail('the engine found no trace bounds');
if (Math.abs(bounds.min - wantMin) > 1 || Math.abs(bounds.max - wantMax) > 1) {
  fail(`bounds ${bounds.min}..${bounds.max}, the file's events span ${wantMin}..${wantMax}`);
}

const pid = calls[0].pid;
const proc = data.Renderer.processes.get(pid);
if (!proc) fail(`the engine has no process ${pid}`);
let seenX = 0, seenI = 0;
for (const [, thread] of proc.threads) {
  for (const e of thread.entries) {
    if (e.ph === 'X') ++seenX;
    if (e.ph === 'I') ++seenI;
  }
}
console.log(`engine entries of pid ${pid}: ${seenX} X of ${calls.length}, ${seenI} I of ${instants.length}`);
if (seenX !== calls.length) fail(`the engine placed ${seenX} of ${calls.length} calls on threads`);
if (seenI !== instants.length) fail(`the engine placed ${seenI} of ${instants.length} instants on threads`);
console.log('PASS');
