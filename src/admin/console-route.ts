// `GET /console` (docs/operations.md#the-operator-console): the operator console, a page
// served by the admin port itself. The page holds no data: its script
// (console/app.ts, compiled to dist/console/app.js) asks for the admin token and calls the
// documented admin API with it. Unauthenticated, like /metrics: the page is the same for
// everyone, and every figure behind it asks for the token.
import { readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';

export const CONSOLE_PATH = '/console';

/**
 * NOTE: only this origin, and no inline script or style: the page shows strings from the
 * outside (messageIds, receivers' errors) and, should one ever get into the document as
 * markup, it can run nothing. No framing (clickjacking of the replay button).
 */
export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self'",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

const HEADERS = {
  'content-security-policy': CONSOLE_CSP,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/**
 * Where the compiled page script is: beside the compiled admin server (dist/console/), or,
 * when the server runs from its TypeScript sources (tests, `tsx`), in the checkout's dist/,
 * which `npm ci` (prepare) and `npm run build` make.
 */
const SCRIPT_CANDIDATES = [new URL('../console/app.js', import.meta.url), new URL('../../dist/console/app.js', import.meta.url)];

function loadScript(): string | undefined {
  for (const url of SCRIPT_CANDIDATES) {
    try {
      return readFileSync(fileURLToPath(url), 'utf8');
    } catch {
      // the next place
    }
  }
  return undefined;
}

/**
 * The console's icon, also answered at `/favicon.ico`, which a browser asks for on every
 * page of the port (a 404 there shows as an error in its console). A switch's two tracks.
 */
const ICON_SVG = `<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><rect width="16" height="16" rx="3" fill="#1d2329"/><path d="M3 12h10M3 12l7-8h3" stroke="#fff" stroke-width="2" fill="none"/></svg>
`;
export const FAVICON_PATH = '/favicon.ico';

/** Answers GET /console, /console/app.js, /console/app.css, /console/icon.svg and /favicon.ico; false for any other path. */
export function createConsoleRoute(): (req: IncomingMessage, res: ServerResponse, path: string) => boolean {
  // Read once, at the first request: the page does not change while the process runs.
  let script: string | undefined;
  return (req, res, path) => {
    if (path !== CONSOLE_PATH && path !== FAVICON_PATH && path !== `${CONSOLE_PATH}/` && !path.startsWith(`${CONSOLE_PATH}/`)) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      answer(res, 405, 'text/plain; charset=utf-8', 'the console is read with GET\n', { allow: 'GET, HEAD' });
      return true;
    }
    if (path === CONSOLE_PATH || path === `${CONSOLE_PATH}/`) answer(res, 200, 'text/html; charset=utf-8', CONSOLE_HTML);
    else if (path === `${CONSOLE_PATH}/app.css`) answer(res, 200, 'text/css; charset=utf-8', CONSOLE_CSS);
    else if (path === `${CONSOLE_PATH}/icon.svg` || path === FAVICON_PATH) answer(res, 200, 'image/svg+xml', ICON_SVG, { 'cache-control': 'max-age=86400' });
    else if (path === `${CONSOLE_PATH}/app.js`) {
      script ??= loadScript();
      if (script === undefined) answer(res, 500, 'text/plain; charset=utf-8', 'the console script (dist/console/app.js) is missing: run npm run build\n');
      else answer(res, 200, 'text/javascript; charset=utf-8', script);
    } else answer(res, 404, 'text/plain; charset=utf-8', 'no such page of the console; open /console\n');
    return true;
  };
}

function answer(res: ServerResponse, status: number, type: string, body: string, extra: Record<string, string> = {}): void {
  // A refusal closes its connection, as every answer of src/admin/respond.ts's send.
  res.writeHead(status, { ...HEADERS, ...extra, ...(status >= 400 ? { connection: 'close' } : {}), 'content-type': type, 'content-length': Buffer.byteLength(body) });
  res.end(res.req.method === 'HEAD' ? undefined : body);
}

/** The page's frame; console/app.ts fills it. Every element the script uses has an id. */
const CONSOLE_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Switchyard console</title>
<link rel="icon" href="/console/icon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/console/app.css">
<script type="module" src="/console/app.js"></script>
</head>
<body>
<header>
  <h1>Switchyard console</h1>
  <p id="answered-by" class="muted"></p>
  <nav id="nav" hidden>
    <button type="button" data-view="destinations" class="tab">Destinations</button>
    <button type="button" data-view="letters" class="tab">Dead letters</button>
    <button type="button" data-view="trace" class="tab">Trace</button>
    <button type="button" data-view="violations" class="tab">Violations</button>
    <button type="button" id="logout" class="link">Forget token</button>
  </nav>
</header>
<main>
  <p id="error" class="error" role="alert" hidden></p>
  <section id="login" hidden>
    <h2>Admin token</h2>
    <p>The console calls this port's admin API with the admin token (<code>admin.token</code>). It is kept in this tab only (sessionStorage) and sent as <code>Authorization: Bearer</code>, never in a URL.</p>
    <p id="login-npm-start">Started with <code>npm start</code>? Unless <code>SWITCHYARD_ADMIN_TOKEN</code> was set, it made a token for the run and keeps it in <code>.cache/npm-start/admin-token</code> in the checkout: <code>cat .cache/npm-start/admin-token</code>.</p>
    <form id="login-form">
      <input id="token" type="password" autocomplete="off" placeholder="admin token" required>
      <button type="submit">Open</button>
    </form>
  </section>
  <section id="view-destinations" hidden>
    <div class="bar"><h2>Destinations</h2><button type="button" id="refresh">Refresh</button><button type="button" id="auto-refresh" aria-pressed="false">Pause auto-refresh</button><span id="destinations-at" class="muted"></span></div>
    <ul id="notes" class="muted"></ul>
    <table id="destinations">
      <thead><tr><th>Destination</th><th>Health</th><th title="events delivered per second over the last minute">Delivered/s</th><th title="the share of the last minute's delivery attempts that did not deliver (sent to retry or dead-lettered)">Error rate</th><th title="95th percentile of one request to a receiver, last minute">p95 request</th><th title="per minute, in this process: events delivered (green), delivery attempts failed (red)">Last hour <span class="legend-delivered">delivered</span> <span class="legend-failed">failed</span></th><th title="each webhook URL's circuit breaker: ok (closed) lets requests through, open holds them back">Circuits</th><th>Retry backlog</th><th>Dead letters</th><th>Lag</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="view-letters" hidden>
    <h2>Dead letters</h2>
    <form id="letters-form" class="bar">
      <label>Destination <select id="letters-destination" required></select></label>
      <label>Since <input id="letters-since" placeholder="24h or ISO 8601"></label>
      <label>Until <input id="letters-until" placeholder="now"></label>
      <button type="submit">List</button>
      <button type="button" id="replay-dry-run">Replay (dry run)</button>
    </form>
    <div id="replay-box" class="box" hidden>
      <p id="replay-summary"></p>
      <button type="button" id="replay-confirm" class="danger">Replay them</button>
      <button type="button" id="replay-cancel">Cancel</button>
    </div>
    <p id="letters-summary" class="muted"></p>
    <table id="letters">
      <thead><tr><th>Dead-lettered at</th><th>messageId</th><th>Attempts</th><th>Reason</th><th>Where</th><th></th></tr></thead>
      <tbody></tbody>
    </table>
    <button type="button" id="letters-more" hidden>Next page</button>
  </section>
  <section id="view-trace" hidden>
    <h2>Trace a user</h2>
    <form id="trace-form" class="bar">
      <label>User id <input id="trace-user" required></label>
      <label>Message id <input id="trace-message" placeholder="optional"></label>
      <label>Since <input id="trace-since" placeholder="24h"></label>
      <button type="submit">Trace</button>
    </form>
    <p id="trace-summary" class="muted"></p>
    <div id="trace-result"></div>
  </section>
  <section id="view-violations" hidden>
    <h2>Tracking-plan violations</h2>
    <form id="violations-form" class="bar">
      <label>Source <input id="violations-source" placeholder="every source"></label>
      <label>Since <input id="violations-since" placeholder="1h"></label>
      <button type="submit">Show</button>
    </form>
    <p id="violations-summary" class="muted"></p>
    <table id="violations">
      <thead><tr><th>Source</th><th>Event</th><th>Calls</th><th>unplanned_event</th><th>required_missing</th><th>type_mismatch</th><th>additional_property</th><th>other</th><th>Delivered / omitted / blocked</th></tr></thead>
      <tbody></tbody>
    </table>
    <h3>Recent examples</h3>
    <div id="violations-recent"></div>
  </section>
</main>
</body>
</html>
`;

const CONSOLE_CSS = `:root { font: 14px/1.4 system-ui, sans-serif; color: #1d2329; background: #f6f7f9; }
body { margin: 0; }
header { background: #1d2329; color: #fff; padding: 8px 16px; display: flex; gap: 16px; align-items: center; flex-wrap: wrap; }
header h1 { font-size: 16px; margin: 0; }
header .muted { color: #b8c0c8; }
[hidden] { display: none !important; }
nav { display: flex; gap: 4px; margin-left: auto; }
main { padding: 12px 16px; }
h2 { font-size: 15px; margin: 8px 0; }
.bar { display: flex; gap: 8px; align-items: center; flex-wrap: wrap; margin-bottom: 8px; }
.muted { color: #5c6670; }
.error { background: #fde8e8; border: 1px solid #e0a0a0; padding: 8px; }
.box { background: #fff7e0; border: 1px solid #e0c060; padding: 8px; margin-bottom: 8px; }
table { border-collapse: collapse; width: 100%; background: #fff; }
th, td { border-bottom: 1px solid #dde1e5; padding: 4px 6px; text-align: left; vertical-align: top; }
th { background: #eceff2; font-weight: 600; }
td.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
code, .mono { font-family: ui-monospace, monospace; font-size: 12px; word-break: break-all; }
button { font: inherit; padding: 3px 10px; cursor: pointer; }
header button { background: #2f3944; color: #fff; border: 1px solid #4a5561; }
header button.active { background: #fff; color: #1d2329; }
button.link { background: none; border: none; color: #b8c0c8; text-decoration: underline; }
button.danger { background: #b42318; color: #fff; border: 1px solid #8a1a12; }
input, select { font: inherit; padding: 2px 4px; }
.health { display: inline-block; padding: 0 6px; border-radius: 3px; font-weight: 600; }
.health-failing { background: #b42318; color: #fff; }
.health-attention { background: #f5c542; }
.health-ok { background: #2e7d32; color: #fff; }
.health-disabled { background: #c3c8cd; }
.reasons { margin: 2px 0 0; padding-left: 16px; color: #8a1a12; }
.lifecycle { margin-top: 2px; }
.lifecycle-state { font-size: 0.9em; }
.lifecycle-failing { color: #8a4b00; }
.lifecycle-disabled { color: #555; font-weight: bold; }
.transitions { margin: 2px 0 0; padding-left: 16px; font-size: 0.85em; color: #555; }
.circuit { white-space: nowrap; word-break: normal; }
.circuit-closed { color: #2e7d32; }
.circuit-open { color: #b42318; font-weight: 600; }
.circuit-half-open { color: #a36a00; font-weight: 600; }
.state-delivered { color: #2e7d32; }
.state-dead_lettered, .state-retrying { color: #b42318; }
.message { background: #fff; border: 1px solid #dde1e5; padding: 6px 8px; margin-bottom: 8px; }
table.attempts { width: auto; margin: 4px 0 6px; }
table.attempts td, table.attempts th { padding: 2px 6px; }
svg.hour { display: block; width: 120px; height: 28px; background: #f6f7f9; }
svg.hour .delivered { stroke: #2e7d32; }
svg.hour .failed { stroke: #b42318; }
.legend-delivered { color: #2e7d32; }
.legend-failed { color: #b42318; }
`;
