// The operator console's page script (docs/operations.md#the-operator-console), served by
// the admin port at /console/app.js. It asks for the admin token once (kept in this tab's
// sessionStorage) and calls the documented admin API (docs/admin-api.md) with
// `Authorization: Bearer`: never a token in a URL, never a cookie.
// NOTE: everything shown goes in as text (textContent, never innerHTML): messageIds,
// receivers' errors and user ids come from outside.

// The answers' types are the admin API's own (src/admin/answers.ts, types only: nothing of
// it is in the compiled script): a change to an answer fails this file's type check.
import type {
  DeadLettersPage,
  DestinationRow,
  DestinationsDocument,
  LastHour,
  LifecycleRow,
  ReplayAnswer,
  ReplayOneAnswer,
  TraceDestination,
  TraceDocument,
  TracedAnswer,
  UrlRow,
  ViolationsDocument,
} from '../src/admin/answers.js';

const TOKEN_KEY = 'switchyard-admin-token';
const VIEWS = ['destinations', 'letters', 'trace', 'violations'] as const;
type View = (typeof VIEWS)[number];

class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

function $(id: string): HTMLElement {
  const element = document.getElementById(id);
  if (element === null) throw new Error(`the page has no #${id}`);
  return element;
}

function input(id: string): HTMLInputElement {
  return $(id) as HTMLInputElement;
}

/** An element with text and classes; children appended as given (strings as text nodes). */
function el(tag: string, options: { text?: string; className?: string; title?: string } = {}, ...children: (Node | string)[]): HTMLElement {
  const element = document.createElement(tag);
  if (options.text !== undefined) element.textContent = options.text;
  if (options.className !== undefined) element.className = options.className;
  if (options.title !== undefined) element.title = options.title;
  for (const child of children) element.append(child);
  return element;
}

function cell(text: string, className?: string): HTMLElement {
  return el('td', className === undefined ? { text } : { text, className });
}

function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

async function api<T>(path: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const headers: Record<string, string> = { authorization: `Bearer ${token() ?? ''}`, accept: 'application/json' };
  if (init.body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method: init.method ?? 'GET',
    headers,
    body: init.body === undefined ? null : JSON.stringify(init.body),
    credentials: 'omit',
    cache: 'no-store',
  });
  const body = (await res.json().catch(() => ({}))) as { message?: string };
  if (!res.ok) throw new ApiError(res.status, `${path.split('?')[0]}: ${res.status} ${body.message ?? res.statusText}`);
  return body as T;
}

function showError(error: unknown): void {
  if (error instanceof ApiError && error.status === 401) {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin('That token was refused (401): enter the admin token of this port.');
    return;
  }
  const box = $('error');
  box.textContent = error instanceof Error ? error.message : String(error);
  box.hidden = false;
}

function clearError(): void {
  $('error').hidden = true;
}

/** Runs an action of the page, showing what went wrong instead of throwing. */
function run(action: () => Promise<void>): void {
  clearError();
  action().catch(showError);
}

// ---- login -----------------------------------------------------------------

function showLogin(message?: string): void {
  stopAutoRefresh();
  for (const view of VIEWS) $(`view-${view}`).hidden = true;
  $('nav').hidden = true;
  $('login').hidden = false;
  if (message !== undefined) {
    const box = $('error');
    box.textContent = message;
    box.hidden = false;
  }
  input('token').focus();
}

function currentView(): View {
  const wanted = location.hash.slice(1);
  return (VIEWS as readonly string[]).includes(wanted) ? (wanted as View) : 'destinations';
}

function showView(view: View): void {
  $('login').hidden = true;
  $('nav').hidden = false;
  for (const v of VIEWS) $(`view-${v}`).hidden = v !== view;
  for (const tab of document.querySelectorAll<HTMLButtonElement>('button.tab')) tab.classList.toggle('active', tab.dataset.view === view);
  if (view === 'destinations') {
    run(loadDestinations);
    startAutoRefresh();
  } else stopAutoRefresh();
  if (view === 'letters') run(fillDestinationChoice);
  if (view === 'violations') run(loadViolations);
}

// ---- auto-refresh ----------------------------------------------------------

/** How often the destinations view reloads itself while shown and not paused. */
const AUTO_REFRESH_MS = 15_000;
let autoTimer: number | undefined;
let autoPaused = false;

function startAutoRefresh(): void {
  stopAutoRefresh();
  if (!autoPaused) autoTimer = window.setInterval(() => run(loadDestinations), AUTO_REFRESH_MS);
  showAutoRefresh();
}

function stopAutoRefresh(): void {
  if (autoTimer !== undefined) window.clearInterval(autoTimer);
  autoTimer = undefined;
}

function showAutoRefresh(): void {
  const button = $('auto-refresh');
  button.textContent = autoPaused ? 'Resume auto-refresh' : 'Pause auto-refresh';
  button.setAttribute('aria-pressed', String(autoPaused));
  button.title = autoPaused ? 'paused: the figures stay as they are until Refresh' : `reloads every ${AUTO_REFRESH_MS / 1000} s`;
}

// ---- destinations ----------------------------------------------------------

let knownDestinations: string[] = [];

async function loadDestinations(): Promise<void> {
  const doc = await api<DestinationsDocument>('/v1/destinations');
  knownDestinations = doc.destinations.map((d) => d.id).sort();
  $('answered-by').textContent = `answered by ${doc.answeredBy.pod} (role ${doc.answeredBy.role}, switchyard ${doc.answeredBy.version})`;
  $('destinations-at').textContent = `as of ${doc.at}${autoPaused ? ' (auto-refresh paused)' : `, refreshed every ${AUTO_REFRESH_MS / 1000} s`}`;
  const notes = $('notes');
  notes.replaceChildren(...doc.notes.map((note) => el('li', { text: note })));
  if (!doc.kafka.ok && doc.kafka.error !== undefined) notes.append(el('li', { text: doc.kafka.error, className: 'error' }));
  const body = ($('destinations') as HTMLTableElement).tBodies[0]!;
  body.replaceChildren(...doc.destinations.map(destinationRow));
}

function destinationRow(d: DestinationRow): HTMLElement {
  const row = el('tr');
  row.dataset.destination = d.id;
  row.dataset.health = d.health;
  const name = el('td', {}, el('strong', { text: d.id }));
  if (d.reasons.length > 0) name.append(el('ul', { className: 'reasons' }, ...d.reasons.map((reason) => el('li', { text: reason }))));
  if (d.lifecycle !== null) name.append(lifecycleBlock(d.id, d.enabled, d.lifecycle));
  const minute = d.lastMinute;
  row.append(
    name,
    el('td', {}, el('span', { text: d.health, className: `health health-${d.health}` })),
    cell(minute === null ? '–' : minute.eventsPerSecond.toFixed(1), 'num'),
    cell(minute === null || minute.errorRate === null ? '–' : `${(minute.errorRate * 100).toFixed(1)} %`, 'num'),
    cell(minute === null || minute.p95AttemptSeconds === null ? '–' : `${Math.round(minute.p95AttemptSeconds * 1000)} ms`, 'num'),
    d.lastHour === null ? cell('–') : el('td', {}, hourChart(d.lastHour)),
    el('td', {}, ...d.urls.map(urlLine)),
    cell(d.retryBacklog === null ? '–' : d.retryBacklog.map((t) => `${t.tier}: ${t.waiting}`).join(', ') || 'none'),
    lettersCell(d),
    cell(d.consumerLag === null ? '–' : String(d.consumerLag), 'num'),
  );
  return row;
}

/** The destination's lifecycle: its state, its last transitions, and the button that changes it (docs/webhooks.md#automatic-disabling). */
function lifecycleBlock(id: string, configEnabled: boolean, lifecycle: LifecycleRow): HTMLElement {
  const block = el('div', { className: 'lifecycle' });
  block.dataset.lifecycle = lifecycle.state;
  const since = lifecycle.since === undefined ? '' : ` since ${lifecycle.since}`;
  block.append(el('span', { text: `state: ${lifecycle.state}${since}`, className: `lifecycle-state lifecycle-${lifecycle.state}` }));
  if (configEnabled) {
    const action = lifecycle.state === 'disabled' ? 'enable' : 'disable';
    const button = el('button', { text: action === 'enable' ? 'Enable' : 'Disable', title: action === 'enable' ? 'deliver again, from where it stopped' : 'stop delivering; its events wait in its topics' });
    button.dataset.action = action;
    button.addEventListener('click', () => run(() => changeLifecycle(id, action)));
    block.append(' ', button);
  }
  const last = lifecycle.history.slice(-3).reverse();
  if (last.length > 0) {
    const items = last.map((h) => el('li', { text: `${h.at} ${h.type.replace('destination.', '')}${h.by === undefined ? '' : ` by ${h.by}`}${h.reason === undefined ? '' : `: ${h.reason}`}` }));
    block.append(el('ul', { className: 'transitions', title: 'the last transitions, newest first' }, ...items));
  }
  return block;
}

async function changeLifecycle(id: string, action: 'enable' | 'disable'): Promise<void> {
  let reason: string | null = null;
  if (action === 'disable') {
    reason = window.prompt(`Disable ${id}: its events wait in its topics until it is enabled. Why? (kept with the state)`, 'maintenance');
    if (reason === null) return;
  }
  const body = reason === null || reason === '' ? { by: 'console' } : { by: 'console', reason };
  await api(`/v1/destinations/${encodeURIComponent(id)}/${action}`, { method: 'POST', body });
  await loadDestinations();
}

/** A circuit as an operator reads it: a closed one lets requests through, so it is "ok". */
const CIRCUIT_WORDS: Record<NonNullable<UrlRow['circuit']>, { text: string; title: string }> = {
  closed: { text: 'ok', title: 'circuit closed: requests go through' },
  open: { text: 'open', title: 'circuit open: no requests until the next probe' },
  'half-open': { text: 'probing', title: 'circuit half-open: one probe request is out' },
};

function urlLine(url: UrlRow): HTMLElement {
  const words = url.circuit === null ? { text: 'no lane here', title: 'this process delivers nothing for this destination' } : CIRCUIT_WORDS[url.circuit];
  const state = el('span', { text: words.text, className: `circuit circuit-${url.circuit ?? 'none'}`, title: words.title });
  state.dataset.circuit = url.circuit ?? '';
  const line = el('div', { className: 'mono' }, `${url.url}: `, state);
  if (url.lastFailure !== undefined) line.title = `last failure ${url.lastFailure.at}: ${url.lastFailure.reason}`;
  return line;
}

// ---- the last hour's chart ------------------------------------------------

const SVG = 'http://www.w3.org/2000/svg';

/**
 * The last hour as two lines, events delivered (green) and attempts failed (red) per
 * minute. NOTE: drawn in the counts' own units (x: the minute's index, y: minus the count,
 * the view box as tall as the largest count), stretched to the box by the browser, so each
 * point of a line is a minute and its count as sent.
 */
function hourChart(hour: LastHour): SVGSVGElement {
  const minutes = hour.delivered.length;
  const top = Math.max(1, ...hour.delivered, ...hour.failed);
  const svg = document.createElementNS(SVG, 'svg');
  svg.setAttribute('class', 'hour');
  svg.setAttribute('viewBox', `0 ${-top} ${Math.max(1, minutes - 1)} ${top}`);
  svg.setAttribute('preserveAspectRatio', 'none');
  svg.setAttribute('role', 'img');
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0);
  const title = document.createElementNS(SVG, 'title');
  title.textContent = `the last ${minutes} minutes from ${hour.from}: ${sum(hour.delivered)} event(s) delivered, ${sum(hour.failed)} delivery attempt(s) failed; most in one minute ${top}`;
  svg.append(title);
  for (const [name, values] of [
    ['delivered', hour.delivered],
    ['failed', hour.failed],
  ] as const) {
    const line = document.createElementNS(SVG, 'polyline');
    line.setAttribute('class', name);
    line.setAttribute('fill', 'none');
    line.setAttribute('stroke-width', '1.5');
    line.setAttribute('vector-effect', 'non-scaling-stroke');
    line.setAttribute('points', values.map((count, i) => `${i},${-count}`).join(' '));
    svg.append(line);
  }
  return svg;
}

function lettersCell(d: DestinationRow): HTMLElement {
  if (d.deadLetters === null) return cell('–', 'num');
  const td = el('td', { className: 'num' });
  if (d.deadLetters.kept === 0) {
    td.textContent = '0';
    return td;
  }
  const open = el('button', { text: `${d.deadLetters.notReplayed} of ${d.deadLetters.kept}`, title: 'not replayed of kept: list them' });
  open.addEventListener('click', () => {
    location.hash = 'letters';
    run(async () => {
      await fillDestinationChoice();
      (document.getElementById('letters-destination') as HTMLSelectElement).value = d.id;
      await listLetters(undefined);
    });
  });
  td.append(open);
  return td;
}

// ---- dead letters ----------------------------------------------------------

let nextCursor: string | null = null;
let pendingReplay: ReplayAnswer | undefined;

async function fillDestinationChoice(): Promise<void> {
  if (knownDestinations.length === 0) await loadDestinations();
  const select = $('letters-destination') as HTMLSelectElement;
  const chosen = select.value;
  if (select.options.length !== knownDestinations.length) {
    select.replaceChildren(...knownDestinations.map((id) => el('option', { text: id })));
    if (knownDestinations.includes(chosen)) select.value = chosen;
  }
}

function letterRange(): { destination: string; since?: string; until?: string } {
  const range: { destination: string; since?: string; until?: string } = { destination: ($('letters-destination') as HTMLSelectElement).value };
  const since = input('letters-since').value.trim();
  const until = input('letters-until').value.trim();
  if (since !== '') range.since = since;
  if (until !== '') range.until = until;
  return range;
}

async function listLetters(cursor: string | undefined): Promise<void> {
  const query = new URLSearchParams(letterRange());
  if (cursor !== undefined) query.set('cursor', cursor);
  const page = await api<DeadLettersPage>(`/v1/dead-letters?${query.toString()}`);
  const body = ($('letters') as HTMLTableElement).tBodies[0]!;
  const rows = page.letters.map((letter) => {
    const row = el(
      'tr',
      {},
      cell(letter.deadLetteredAt ?? '–'),
      cell(letter.messageId ?? '(none)', 'mono'),
      cell(letter.attempts === null ? '–' : String(letter.attempts), 'num'),
      cell(letter.error ?? '–', 'mono'),
      cell(`p${letter.partition} @${letter.offset}${letter.replayed ? ' (replayed)' : ''}`),
      replayCell(letter),
    );
    row.dataset.messageId = letter.messageId ?? '';
    return row;
  });
  if (cursor === undefined) body.replaceChildren(...rows);
  else body.append(...rows);
  nextCursor = page.nextCursor;
  $('letters-more').hidden = nextCursor === null;
  const shown = body.rows.length;
  $('letters-summary').textContent = page.topicExists
    ? `${shown} of ${page.inRange} dead letter(s) in the range, from ${page.topic}`
    : `${page.topic} does not exist yet: nothing was dead-lettered`;
}

/** A button that puts this one letter back (POST /v1/replay with its messageId); none once replayed or without a messageId. */
function replayCell(letter: DeadLettersPage['letters'][number]): HTMLElement {
  const td = el('td');
  if (letter.replayed || letter.messageId === null) return td;
  const messageId = letter.messageId;
  const button = el('button', { text: 'Replay', title: 'put this dead letter back for delivery, once', className: 'replay-one' }) as HTMLButtonElement;
  button.type = 'button';
  button.addEventListener('click', () => {
    button.disabled = true;
    run(() => replayOne(messageId));
  });
  td.append(button);
  return td;
}

async function replayOne(messageId: string): Promise<void> {
  const destination = ($('letters-destination') as HTMLSelectElement).value;
  const answer = await api<ReplayOneAnswer>('/v1/replay', { method: 'POST', body: { destination, messageId, dryRun: false } });
  $('replay-summary').textContent = answer.alreadyReplayed
    ? `Dead letter ${answer.messageId} of ${answer.destination} was already replayed; nothing moved.`
    : `Replayed dead letter ${answer.messageId} of ${answer.destination} back to delivery.`;
  ($('replay-confirm') as HTMLButtonElement).disabled = true;
  $('replay-box').hidden = false;
  await listLetters(undefined);
}

async function dryRun(): Promise<void> {
  const answer = await api<ReplayAnswer>('/v1/replay', { method: 'POST', body: { ...letterRange(), dryRun: true } });
  pendingReplay = answer;
  const range = `${answer.since === null ? 'any time' : `from ${answer.since}`} until ${answer.until ?? 'now'}`;
  $('replay-summary').textContent = `Dry run: ${answer.count} dead letter(s) of ${answer.destination} dead-lettered ${range} would go back to delivery. Nothing moved yet.`;
  ($('replay-confirm') as HTMLButtonElement).disabled = answer.count === 0;
  $('replay-box').hidden = false;
}

async function confirmReplay(): Promise<void> {
  const pending = pendingReplay;
  if (pending === undefined) return;
  pendingReplay = undefined;
  const body: Record<string, unknown> = { destination: pending.destination, dryRun: false };
  // The bounds the dry run answered with: the same letters, not those dead-lettered since.
  if (pending.since !== null) body.since = pending.since;
  if (pending.until !== null) body.until = pending.until;
  const answer = await api<ReplayAnswer>('/v1/replay', { method: 'POST', body });
  $('replay-summary').textContent = `Replayed ${answer.count} dead letter(s) of ${answer.destination} back to delivery.`;
  ($('replay-confirm') as HTMLButtonElement).disabled = true;
  await listLetters(undefined);
}

// ---- trace -----------------------------------------------------------------

async function trace(): Promise<void> {
  const query = new URLSearchParams({ userId: input('trace-user').value.trim() });
  const message = input('trace-message').value.trim();
  const since = input('trace-since').value.trim();
  if (message !== '') query.set('messageId', message);
  if (since !== '') query.set('since', since);
  const doc = await api<TraceDocument>(`/v1/trace?${query.toString()}`);
  $('trace-summary').textContent = `${doc.messages.length} call(s) from ${doc.since} until ${doc.until}`;
  $('trace-result').replaceChildren(
    ...doc.messages.map((m) => {
      const title = `${m.receivedAt}  ${m.type}${m.event === undefined ? '' : ` "${m.event}"`}  from ${m.source}  messageId ${m.messageId}`;
      const box = el('div', { className: 'message' }, el('div', { text: title, className: 'mono' }));
      if (m.invalid !== undefined) box.append(el('div', { text: `invalid: ${m.invalid}`, className: 'error' }));
      box.append(el('ul', {}, ...m.destinations.map(traceLine)));
      return box;
    }),
  );
}

function traceLine(d: TraceDestination): HTMLElement {
  const details = [
    d.reason === undefined ? '' : `reason ${d.reason}`,
    d.attempts === undefined ? '' : `${d.attempts} attempt(s)`,
    d.lastError === undefined ? '' : `last error: ${d.lastError}`,
    d.nextAttemptAt === undefined ? '' : `next attempt ${d.nextAttemptAt}`,
    d.deadLetteredAt === undefined ? '' : `dead-lettered ${d.deadLetteredAt}`,
  ].filter((s) => s !== '');
  const line = el('li', {}, `${d.id}: `, el('span', { text: d.state, className: `state-${d.state}` }), details.length > 0 ? ` (${details.join('; ')})` : '');
  line.dataset.destination = d.id;
  if (d.history !== undefined && d.history.length > 0) line.append(attemptsTable(d.history));
  return line;
}

/** The failed answers of a destination, oldest first: when, which URL, status or error, latency, the start of the body. */
function attemptsTable(history: readonly TracedAnswer[]): HTMLElement {
  const head = el('thead', {}, el('tr', {}, ...['Attempted at', 'URL', 'Status', 'Latency', 'Answer'].map((name) => el('th', { text: name }))));
  const rows = history.map((a) =>
    el(
      'tr',
      {},
      cell(a.at, 'mono'),
      cell(`webhooks[${a.urlIndex}]`, 'mono'),
      cell(a.status !== undefined ? String(a.status) : (a.error ?? '–'), a.status !== undefined ? 'num' : undefined),
      cell(`${a.latencyMs} ms`, 'num'),
      cell(a.response ?? '', 'mono'),
    ),
  );
  return el('table', { className: 'attempts' }, head, el('tbody', {}, ...rows));
}

// ---- tracking-plan violations ---------------------------------------------

const VIOLATION_TYPES = ['unplanned_event', 'required_missing', 'type_mismatch', 'additional_property', 'other'] as const;

async function loadViolations(): Promise<void> {
  const query = new URLSearchParams();
  const source = input('violations-source').value.trim();
  const since = input('violations-since').value.trim();
  if (source !== '') query.set('source', source);
  if (since !== '') query.set('since', since);
  const doc = await api<ViolationsDocument>(`/v1/violations${query.size > 0 ? `?${query.toString()}` : ''}`);
  const calls = doc.groups.reduce((n, g) => n + g.calls, 0);
  $('violations-summary').textContent =
    `${calls} violating call(s) from ${doc.since} until ${doc.until}` + (doc.complete ? '' : ' (a busy partition: counted from its latest records only)');
  const body = ($('violations') as HTMLTableElement).tBodies[0]!;
  body.replaceChildren(
    ...doc.groups.map((g) =>
      el(
        'tr',
        {},
        cell(g.source),
        cell(g.event),
        cell(String(g.calls)),
        ...VIOLATION_TYPES.map((type) => cell(String(g.byType[type] ?? 0))),
        cell(`${g.byAction.delivered ?? 0} / ${g.byAction.omitted ?? 0} / ${g.byAction.blocked ?? 0}`),
      ),
    ),
  );
  $('violations-recent').replaceChildren(
    ...doc.recent.map((r) => {
      const box = el('div', { className: 'message' }, el('div', { text: `${r.receivedAt}  ${r.source}  "${r.event}"  messageId ${r.messageId}  ${r.action}`, className: 'mono' }));
      const lines = r.violations.map((v) => el('li', { text: `${v.type} at ${v.pointer}: expected ${v.expected}, got ${v.actual}` }));
      if (r.more !== undefined) lines.push(el('li', { text: `and ${r.more} more` }));
      box.append(el('ul', {}, ...lines));
      return box;
    }),
  );
}

// ---- wiring ----------------------------------------------------------------

function start(): void {
  $('login-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(TOKEN_KEY, input('token').value);
    input('token').value = '';
    clearError();
    showView(currentView());
  });
  $('logout').addEventListener('click', () => {
    sessionStorage.removeItem(TOKEN_KEY);
    showLogin();
  });
  for (const tab of document.querySelectorAll<HTMLButtonElement>('button.tab')) {
    tab.addEventListener('click', () => {
      location.hash = tab.dataset.view ?? 'destinations';
    });
  }
  window.addEventListener('hashchange', () => {
    if (token() !== null) showView(currentView());
  });
  $('refresh').addEventListener('click', () => run(loadDestinations));
  $('auto-refresh').addEventListener('click', () => {
    autoPaused = !autoPaused;
    if (currentView() === 'destinations' && token() !== null) startAutoRefresh();
    else showAutoRefresh();
  });
  $('letters-form').addEventListener('submit', (event) => {
    event.preventDefault();
    $('replay-box').hidden = true;
    run(() => listLetters(undefined));
  });
  $('letters-more').addEventListener('click', () => run(() => listLetters(nextCursor ?? undefined)));
  $('replay-dry-run').addEventListener('click', () => run(dryRun));
  $('replay-confirm').addEventListener('click', () => run(confirmReplay));
  $('replay-cancel').addEventListener('click', () => {
    pendingReplay = undefined;
    $('replay-box').hidden = true;
  });
  $('trace-form').addEventListener('submit', (event) => {
    event.preventDefault();
    run(trace);
  });
  $('violations-form').addEventListener('submit', (event) => {
    event.preventDefault();
    run(loadViolations);
  });
  if (token() === null) showLogin();
  else showView(currentView());
}

start();
