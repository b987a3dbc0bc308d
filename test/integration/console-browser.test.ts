// The operator console (GET /console), driven in headless Chromium (Debian's `chromium`,
// through playwright-core; no browser download): one `switchyard all`, one receiver, a few
// events. Log in with the token, see every destination with the failing one first and its
// reason, list its dead letters, dry-run then replay them and see them delivered, trace
// the user; see the source's tracking-plan violations; see a message's failed attempts as
// a table in its trace and put its dead letter back with its own button; and strings from
// outside (a messageId, a receiver's error) shown as text.
// Screenshots go to test/artifacts/console/ for a person to look at.
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { execFileSync } from 'node:child_process';
import { chromium } from 'playwright-core';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, startDaemon, writeConfigFile } from '../support/daemon.js';
import type { Daemon } from '../support/daemon.js';
import { createTestKafka, randomName, randomPrefix, testBrokers } from '../support/kafka.js';
import { printedUrl, startReceiver } from '../support/receiver.js';
import type { Receiver } from '../support/receiver.js';
import { waitFor } from '../support/wait-for.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const ARTIFACTS = join(ROOT, 'test', 'artifacts', 'console');
const CHROMIUM = '/usr/bin/chromium';
const TOKEN = 'console-test-admin-token-0001';
const WRITE_KEY = 'console-test-write-key';
const FLAKY_KEY = 'console-test-flaky-key';
/** What /flaky answers each request of a message, in turn; later ones 200. */
const FLAKY_ANSWERS = [
  { status: 500, body: 'boom: database down' },
  { status: 503, body: '' },
  { status: 500, body: 'boom again: still down' },
];
const USER = 'u-console';
/** A messageId and an error that would run script if the page put them in as markup. */
const XSS_MESSAGE_ID = '<img src=x onerror="window.__xssMessageId=1">';
const XSS_ERROR = 'webhooks[0] http://127.0.0.1: 503 <img src=x onerror="window.__xssError=1">';
/** The flags the payloads would set, read in the page (a string: this file has Node's types, not the DOM's). */
const XSS_FLAGS = '[globalThis.__xssMessageId, globalThis.__xssError]';

/**
 * NOTE: without the background-networking flags Chromium keeps calling Google's services,
 * which on a machine without internet floods the network with retries.
 */
const CHROMIUM_ARGS = ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'];

let kafka: Awaited<ReturnType<typeof createTestKafka>>;
let receiver: Receiver;
let daemon: Daemon;
let context: BrowserContext;
let page: Page;
let profile: string;
let adminBase: string;
let gatewayBase: string;
let prefix: string;
/** The receiver answers 501 on /down until the test fixes it. */
let downFixed = false;

async function shot(name: string): Promise<void> {
  await page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
}

async function send(messageIds: string[], writeKey = WRITE_KEY): Promise<void> {
  const batch = messageIds.map((messageId) => ({ type: 'track', userId: USER, messageId, event: 'Order Completed', properties: { total: 42 } }));
  const res = await fetch(`${gatewayBase}/v1/batch`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Basic ${Buffer.from(`${writeKey}:`).toString('base64')}` },
    body: JSON.stringify({ batch }),
  });
  expect(res.status).toBe(200);
}

async function api<T>(path: string): Promise<T> {
  const res = await fetch(`${adminBase}${path}`, { headers: { authorization: `Bearer ${TOKEN}` } });
  expect(res.status).toBe(200);
  return (await res.json()) as T;
}

/** A destination's last-hour chart as drawn: each line's points as [minute index, count]. */
async function chartOf(destination: string): Promise<{ delivered: number[][]; failed: number[][] }> {
  const line = (name: string) =>
    page
      .locator(`tr[data-destination="${destination}"] svg.hour polyline.${name}`)
      .getAttribute('points')
      .then((points) => (points ?? '').split(' ').map((point) => point.split(',').map(Number)).map(([x, y]) => [x!, -y! || 0]));
  return { delivered: await line('delivered'), failed: await line('failed') };
}

const total = (points: number[][]) => points.reduce((sum, [, count]) => sum + count!, 0);

/** The destination ids of the table's rows, top to bottom. */
async function rowOrder(): Promise<string[]> {
  return page.locator('#destinations tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-destination') ?? ''));
}

beforeAll(async () => {
  if (!existsSync(CHROMIUM)) throw new Error(`no Chromium at ${CHROMIUM}: install Debian's package as root (apt-get install chromium); npm test does it when it runs as root (scripts/ensure-chromium.sh)`);
  // The page script as it ships (dist/console/app.js), fresh from console/app.ts.
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build-console.mjs')], { cwd: ROOT });
  mkdirSync(ARTIFACTS, { recursive: true });
  kafka = await createTestKafka();
  receiver = await startReceiver();
  receiver.replyWith((request) => {
    if (request.path === '/flaky') {
      const { messageId } = JSON.parse(request.text) as { messageId: string };
      const answer = FLAKY_ANSWERS[receiver.requests.filter((r) => r.path === '/flaky' && r.text.includes(`"messageId":${JSON.stringify(messageId)}`)).length - 1];
      return answer ?? { status: 200 };
    }
    return request.path === '/down' && !downFixed ? { status: 501, body: 'down for maintenance' } : { status: 200 };
  });
  prefix = randomPrefix();
  const file = writeConfigFile({
    kafka: { brokers: testBrokers(), clientId: randomName('console'), topicPrefix: prefix, partitions: 1 },
    gateway: { port: 0, host: '127.0.0.1' },
    admin: { port: 0, token: TOKEN },
    delivery: { retryTiers: ['1s'], maxRetryWindow: '30s' },
    // The plan wants the total as a string: every call violates it, and observe delivers each as sent.
    sources: [
      { id: 'web', writeKey: WRITE_KEY, destinations: ['hooks-down', 'hooks-ok'], trackingPlan: { id: 'web-plan', mode: 'observe' } },
      { id: 'flaky', writeKey: FLAKY_KEY, destinations: ['hooks-flaky'] },
    ],
    trackingPlans: [{ id: 'web-plan', events: { 'Order Completed': { type: 'object', properties: { total: { type: 'string' } } } } }],
    destinations: [
      { id: 'hooks-ok', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/ok') }] } },
      // 501 is permanent (docs/webhooks.md#delivery-and-retries): each event is dead-lettered after one request.
      { id: 'hooks-down', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/down') }] } },
      { id: 'hooks-off', type: 'webhooks', enabled: false, settings: { webhooks: [{ url: receiver.url('/off') }] } },
      { id: 'hooks-xss', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/xss') }] } },
      // Attempts at 0, 3 s and 5 s: the third ends the 5 s window, and the event is dead-lettered.
      { id: 'hooks-flaky', type: 'webhooks', settings: { webhooks: [{ url: receiver.url('/flaky') }], retry: { tiers: ['3s'], maxWindow: '5s' } } },
    ],
  });
  daemon = startDaemon(['all', '--config', file]);
  const adminPort = (await daemon.waitForLog((l) => l.msg === 'admin server listening', 'the admin port')).port as number;
  const gatewayPort = (await daemon.waitForLog((l) => l.msg === 'gateway listening', 'the gateway port')).port as number;
  adminBase = `http://127.0.0.1:${adminPort}`;
  gatewayBase = `http://127.0.0.1:${gatewayPort}`;
  await waitFor(async () => (await fetch(`${adminBase}/readyz`)).status === 200, { timeoutMs: 90_000, what: 'the daemon to be ready' });
  profile = mkdtempSync(join(tmpdir(), 'switchyard-chromium-'));
  context = await chromium.launchPersistentContext(profile, { executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS, viewport: { width: 1280, height: 720 } });
  page = context.pages()[0] ?? (await context.newPage());
}, 180_000);

afterAll(async () => {
  await context?.close();
  if (profile) rmSync(profile, { recursive: true, force: true });
  if (daemon) await killAll([daemon]);
  await receiver?.close();
  await kafka?.close();
});

describe('the operator console in Chromium', () => {
  it('logs in, shows the failing destination first, lists, dry-runs and replays its dead letters, and traces the user', async () => {
    const ids = ['c-1', 'c-2', XSS_MESSAGE_ID];
    await send(ids);
    await waitFor(async () => (await api<{ inRange: number }>('/v1/dead-letters?destination=hooks-down')).inRange === 3, { timeoutMs: 60_000, what: 'three dead letters of hooks-down' });
    await waitFor(() => receiver.requests.filter((r) => r.path === '/ok').length === 3, { what: 'hooks-ok to get the three events' });

    // What the browser reports as failed while the page loads and logs in: nothing (no 404 for /favicon.ico either).
    const failures: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') failures.push(`console: ${message.text()}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) failures.push(`${response.status()} ${response.url()}`);
    });

    // The page asks for the token, and shows nothing else: no tabs, no "Forget token".
    await page.goto(`${adminBase}/console`);
    await page.locator('#login').waitFor();
    for (const hidden of ['#nav', '#logout', 'button.tab >> nth=0', '#view-destinations']) expect(await page.locator(hidden).isVisible(), `${hidden} on the login screen`).toBe(false);
    expect(await page.locator('#login').innerText()).toContain('npm start? Unless SWITCHYARD_ADMIN_TOKEN was set, it made a token for the run and keeps it in .cache/npm-start/admin-token');
    await shot('login');
    // The token goes in a form, not a URL.
    await page.locator('#token').fill(TOKEN);
    await page.locator('#login-form button[type=submit]').click();
    await page.locator('#destinations tbody tr').first().waitFor();
    expect(page.url()).not.toContain(TOKEN);
    expect(await page.evaluate(() => sessionStorage.getItem('switchyard-admin-token'))).toBe(TOKEN);

    // Every configured destination, the failing one first, with what its receiver answered.
    expect((await rowOrder()).sort()).toEqual(['hooks-down', 'hooks-flaky', 'hooks-off', 'hooks-ok', 'hooks-xss']);
    expect((await rowOrder())[0]).toBe('hooks-down');
    const down = page.locator('tr[data-destination="hooks-down"]');
    expect(await down.getAttribute('data-health')).toBe('failing');
    await expect.poll(() => down.locator('.reasons').innerText(), { timeout: 15_000 }).toContain(`${printedUrl(receiver.url('/down'))}: no 2xx since`);
    const reasons = await down.locator('.reasons').innerText();
    expect(reasons).toContain('last answer 501 Not Implemented');
    expect(reasons).toMatch(/3 of 3 delivery attempts failed in the last \d+ s \(3 dead-lettered\)/);
    // A healthy circuit reads "ok", on one line; each row has the last hour drawn from what was sent.
    const okCircuit = page.locator('tr[data-destination="hooks-ok"] [data-circuit="closed"]');
    expect(await okCircuit.innerText()).toBe('ok');
    expect(await okCircuit.evaluate((span) => span.getClientRects().length)).toBe(1);
    const okChart = await chartOf('hooks-ok');
    expect(okChart.delivered.map(([x]) => x)).toEqual([...Array(60).keys()]);
    expect([total(okChart.delivered), total(okChart.failed)]).toEqual([3, 0]);
    const downChart = await chartOf('hooks-down');
    expect([total(downChart.delivered), total(downChart.failed)]).toEqual([0, 3]);
    // The chart's scale is the largest count in a minute: the top of its view box.
    expect(await page.locator('tr[data-destination="hooks-down"] svg.hour').getAttribute('viewBox')).toBe(`0 ${-Math.max(...downChart.failed.map(([, n]) => n!))} 59 ${Math.max(...downChart.failed.map(([, n]) => n!))}`);
    expect(failures, 'failed requests and console errors').toEqual([]);
    expect(reasons).toContain('3 dead letters not replayed');
    expect(await page.locator('tr[data-destination="hooks-off"]').getAttribute('data-health')).toBe('disabled');
    expect(await page.locator('tr[data-destination="hooks-ok"]').getAttribute('data-health')).toBe('ok');
    expect(await page.locator('#answered-by').innerText()).toMatch(/^answered by .+ \(role all, switchyard /);
    await shot('destinations');

    // Its dead letters: from the row's count to the list, the XSS messageId as text.
    await down.locator('button', { hasText: '3 of 3' }).click();
    await expect.poll(() => page.locator('#letters tbody tr').count(), { timeout: 15_000 }).toBe(3);
    expect(await page.locator('#letters-summary').innerText()).toBe(`3 of 3 dead letter(s) in the range, from ${prefix}deliveries.hooks-down.dlq`);
    const listed = await page.locator('#letters tbody tr').evaluateAll((rows) => rows.map((row) => row.getAttribute('data-message-id')));
    expect(listed.sort()).toEqual([...ids].sort());
    expect(await page.locator('#letters').innerText()).toContain(`${printedUrl(receiver.url('/down'))}: 501 Not Implemented`);
    await shot('dead-letters');

    // The receiver is fixed; a dry run counts, moves nothing; the confirm moves them.
    downFixed = true;
    const before = receiver.requests.filter((r) => r.path === '/down').length;
    await page.locator('#replay-dry-run').click();
    await page.locator('#replay-box').waitFor();
    expect(await page.locator('#replay-summary').innerText()).toMatch(/^Dry run: 3 dead letter\(s\) of hooks-down dead-lettered any time until \S+ would go back to delivery\. Nothing moved yet\.$/);
    await shot('replay-dry-run');
    expect(receiver.requests.filter((r) => r.path === '/down').length).toBe(before);
    await page.locator('#replay-confirm').click();
    await expect.poll(() => page.locator('#replay-summary').innerText(), { timeout: 15_000 }).toBe('Replayed 3 dead letter(s) of hooks-down back to delivery.');
    await waitFor(() => receiver.requests.filter((r) => r.path === '/down').length === before + 3, { what: 'the three replayed events delivered' });
    const redelivered = receiver.requests.filter((r) => r.path === '/down').slice(before).map((r) => (JSON.parse(r.text) as { messageId: string }).messageId);
    expect(redelivered.sort()).toEqual([...ids].sort());
    await expect.poll(() => page.locator('#letters tbody tr').allInnerTexts(), { timeout: 15_000 }).toEqual(expect.arrayContaining([expect.stringContaining('(replayed)')]));

    // The replayed three are delivered now: hooks-down's chart says so, its failures stay.
    await page.locator('button.tab[data-view="destinations"]').click();
    await expect.poll(async () => total((await chartOf('hooks-down')).delivered), { timeout: 15_000 }).toBe(3);
    expect(total((await chartOf('hooks-down')).failed)).toBe(3);
    await shot('destinations-after-replay');

    // Trace the user: their three calls, delivered to hooks-ok.
    await page.locator('button.tab[data-view="trace"]').click();
    await page.locator('#trace-user').fill(USER);
    await page.locator('#trace-form button[type=submit]').click();
    await expect.poll(() => page.locator('#trace-result .message').count(), { timeout: 30_000 }).toBe(3);
    const traced = await page.locator('#trace-result').innerText();
    expect(traced).toContain(XSS_MESSAGE_ID);
    expect(traced.match(/hooks-ok: delivered/g)).toHaveLength(3);
    await shot('trace');
    expect(await page.evaluate(XSS_FLAGS)).toEqual([undefined, undefined]);
  });

  it("shows the tracking-plan violations of the last hour per source and event, with recent examples as text", async () => {
    await page.locator('button.tab[data-view="violations"]').click();
    await expect.poll(() => page.locator('#violations tbody tr').count(), { timeout: 30_000 }).toBe(1);
    const row = await page.locator('#violations tbody tr').innerText();
    // Source, event, calls, then the count of each type, then what observe did with them.
    expect(row.split('\t').map((c) => c.trim())).toEqual(['web', 'Order Completed', '3', '0', '0', '3', '0', '0', '3 / 0 / 0']);
    expect(await page.locator('#violations-summary').innerText()).toMatch(/^3 violating call\(s\) from \S+ until \S+$/);
    const examples = await page.locator('#violations-recent').innerText();
    expect(examples).toContain(XSS_MESSAGE_ID);
    expect(examples).toContain('type_mismatch at /properties/total: expected string, got integer');
    await shot('violations');
    expect(await page.evaluate(XSS_FLAGS)).toEqual([undefined, undefined]);
  });

  it('shows a messageId and an error holding markup as text: no element made, no script run', async () => {
    await kafka.produce(`${prefix}deliveries.hooks-xss.dlq`, [
      {
        key: USER,
        value: '{"type":"track"}',
        headers: { 'source-id': 'web', 'message-id': XSS_MESSAGE_ID, attempt: '4', 'first-attempt-at': '2026-05-01T11:00:00.000Z', 'last-attempt-at': new Date().toISOString(), error: XSS_ERROR },
      },
    ]);
    await page.locator('button.tab[data-view="destinations"]').click();
    await page.locator('#refresh').click();
    await page.locator('button.tab[data-view="letters"]').click();
    await page.locator('#letters-destination').selectOption('hooks-xss');
    await page.locator('#letters-form button[type=submit]').click();
    await expect.poll(() => page.locator('#letters tbody tr').count(), { timeout: 30_000 }).toBe(1);
    const row = await page.locator('#letters tbody tr').innerText();
    expect(row).toContain(XSS_MESSAGE_ID);
    expect(row).toContain(XSS_ERROR);
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.evaluate(XSS_FLAGS)).toEqual([undefined, undefined]);
    await shot('dead-letters-xss');
  });

  it('reloads the destinations every 15 s while shown, not while paused; serves its icon at /favicon.ico', async () => {
    const tab = await context.newPage();
    try {
      // The page's clock, moved by the test: 15 s pass in an instant.
      await tab.clock.install();
      let loads = 0;
      tab.on('request', (request) => {
        if (new URL(request.url()).pathname === '/v1/destinations') loads += 1;
      });
      await tab.goto(`${adminBase}/console`);
      await tab.locator('#token').fill(TOKEN);
      await tab.locator('#login-form button[type=submit]').click();
      await expect.poll(() => loads).toBe(1);
      expect(await tab.locator('#auto-refresh').innerText()).toBe('Pause auto-refresh');
      await tab.clock.fastForward(15_000);
      await expect.poll(() => loads).toBe(2);

      await tab.locator('#auto-refresh').click();
      expect(await tab.locator('#auto-refresh').innerText()).toBe('Resume auto-refresh');
      await tab.clock.fastForward(60_000);
      // A reload by hand after the minute: had the timer run, its request would come first.
      await tab.locator('#refresh').click();
      await expect.poll(() => loads).toBe(3);
      await expect.poll(() => tab.locator('#destinations-at').innerText()).toContain('(auto-refresh paused)');
      expect(loads).toBe(3);

      await tab.locator('#auto-refresh').click();
      await tab.clock.fastForward(15_000);
      await expect.poll(() => loads).toBe(4);
    } finally {
      await tab.close();
    }

    const icon = await fetch(`${adminBase}/favicon.ico`);
    expect(icon.status).toBe(200);
    expect(icon.headers.get('content-type')).toBe('image/svg+xml');
    expect(await icon.text()).toMatch(/^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
  });

  it("shows a message's failed attempts as a table in its trace, and puts its dead letter back with the letter's own button, once", async () => {
    await send(['m-flaky'], FLAKY_KEY);
    await waitFor(async () => (await api<{ inRange: number }>('/v1/dead-letters?destination=hooks-flaky')).inRange === 1, { timeoutMs: 60_000, what: 'm-flaky dead-lettered after three attempts' });

    await page.locator('button.tab[data-view="trace"]').click();
    await page.locator('#trace-user').fill(USER);
    await page.locator('#trace-message').fill('m-flaky');
    await page.locator('#trace-form button[type=submit]').click();
    const attempts = page.locator('#trace-result li[data-destination="hooks-flaky"] table.attempts');
    await expect.poll(() => attempts.locator('tbody tr').count(), { timeout: 30_000 }).toBe(3);
    expect(await attempts.locator('thead th').allInnerTexts()).toEqual(['Attempted at', 'URL', 'Status', 'Latency', 'Answer']);
    const rows = await attempts.locator('tbody tr').evaluateAll((trs) => trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent ?? '')));
    // Oldest first, each as the receiver answered it.
    expect(rows.map(([, url, status, , answer]) => [url, status, answer])).toEqual([
      ['webhooks[0]', '500', 'boom: database down'],
      ['webhooks[0]', '503', ''],
      ['webhooks[0]', '500', 'boom again: still down'],
    ]);
    for (const [at, , , latency] of rows) {
      expect(at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
      expect(latency).toMatch(/^\d+ ms$/);
    }
    const times = rows.map(([at]) => Date.parse(at!));
    expect([...times].sort((a, b) => a - b)).toEqual(times);
    expect(await page.locator('#trace-result li[data-destination="hooks-flaky"]').innerText()).toContain(`last error: ${printedUrl(receiver.url('/flaky'))}: 500 Internal Server Error: boom again: still down`);
    await shot('trace-attempts');

    // Its dead letter, with a button of its own: one click puts back that letter, once.
    await page.locator('button.tab[data-view="letters"]').click();
    await page.locator('#letters-destination').selectOption('hooks-flaky');
    await page.locator('#letters-form button[type=submit]').click();
    const letter = page.locator('#letters tbody tr[data-message-id="m-flaky"]');
    await letter.waitFor();
    expect(await letter.innerText()).toContain(`${printedUrl(receiver.url('/flaky'))}: 500 Internal Server Error: boom again: still down`);
    const before = receiver.requests.filter((r) => r.path === '/flaky').length;
    await letter.locator('button.replay-one').click();
    await expect.poll(() => page.locator('#replay-summary').innerText(), { timeout: 15_000 }).toBe('Replayed dead letter m-flaky of hooks-flaky back to delivery.');
    await waitFor(() => receiver.requests.filter((r) => r.path === '/flaky').length === before + 1, { what: 'm-flaky delivered after its replay' });
    await expect.poll(() => letter.innerText(), { timeout: 15_000 }).toContain('(replayed)');
    expect(await letter.locator('button.replay-one').count()).toBe(0);
    await shot('dead-letter-replayed-one');
    // Asked again (another tab, a double click): found replayed, nothing moved.
    const again = await fetch(`${adminBase}/v1/replay`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ destination: 'hooks-flaky', messageId: 'm-flaky', dryRun: false }) });
    expect(await again.json()).toMatchObject({ count: 0, alreadyReplayed: true });
    expect(receiver.requests.filter((r) => r.path === '/flaky').length).toBe(before + 1);
  });

  it('serves the page under its CSP to anyone, and its data only with the Bearer token, never from a URL', async () => {
    const pageAnswer = await fetch(`${adminBase}/console`);
    expect(pageAnswer.status).toBe(200);
    expect(pageAnswer.headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    );
    expect(await pageAnswer.text()).not.toMatch(/<script>|<style>| on\w+=/);
    const script = await fetch(`${adminBase}/console/app.js`);
    expect(script.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect(await script.text()).not.toMatch(/\.(inner|outer)HTML\s*=|insertAdjacentHTML|document\.write/);

    for (const path of ['/v1/destinations', '/v1/dead-letters?destination=hooks-down', `/v1/destinations?token=${TOKEN}`]) {
      expect((await fetch(`${adminBase}${path}`)).status).toBe(401);
    }
    const replayByGet = await fetch(`${adminBase}/v1/replay?destination=hooks-down&dryRun=true`, { headers: { authorization: `Bearer ${TOKEN}` } });
    expect(replayByGet.status).toBe(405);
    const noDryRun = await fetch(`${adminBase}/v1/replay`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ destination: 'hooks-down' }) });
    expect(noDryRun.status).toBe(400);

    // Pages of the same letters as `dlq list`, by cursor.
    type Page = { letters: { messageId: string; replayed: boolean }[]; inRange: number; nextCursor: string | null };
    const first = await api<Page>('/v1/dead-letters?destination=hooks-down&limit=2');
    expect(first.inRange).toBe(3);
    expect(first.letters).toHaveLength(2);
    expect(first.nextCursor).not.toBeNull();
    const second = await api<Page>(`/v1/dead-letters?destination=hooks-down&limit=2&cursor=${encodeURIComponent(first.nextCursor!)}`);
    expect(second.letters).toHaveLength(1);
    expect(second.nextCursor).toBeNull();
    expect([...first.letters, ...second.letters].map((l) => l.messageId).sort()).toEqual(['c-1', 'c-2', XSS_MESSAGE_ID].sort());
    expect([...first.letters, ...second.letters].every((l) => l.replayed)).toBe(true);

    // Replayed already: a dry run finds none left.
    const res = await fetch(`${adminBase}/v1/replay`, { method: 'POST', headers: { authorization: `Bearer ${TOKEN}` }, body: JSON.stringify({ destination: 'hooks-down', dryRun: true }) });
    expect(await res.json()).toMatchObject({ destination: 'hooks-down', dryRun: true, since: null, count: 0 });
  });
  it('shows a disabled destination with who disabled it and why, and its Enable button delivers what waited', async () => {
    // Disabled by hand through the admin API, as an operator doing maintenance would.
    const disable = await fetch(`${adminBase}/v1/destinations/hooks-ok/disable`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ reason: 'receiver maintenance until 14:00', by: 'the console test' }),
    });
    expect(disable.status, await disable.clone().text()).toBe(200);
    expect(await disable.json()).toMatchObject({ success: true, state: 'disabled', event: { type: 'destination.disabled', destination: 'hooks-ok', by: 'the console test (admin API)', automatic: false } });
    // An event sent while it is disabled waits in its topic.
    const okBefore = receiver.requests.filter((r) => r.path === '/ok').length;
    await send(['c-while-disabled']);
    await page.locator('button.tab[data-view="destinations"]').click();
    await page.locator('#refresh').click();
    const row = page.locator('tr[data-destination="hooks-ok"]');
    await expect.poll(() => row.getAttribute('data-health'), { timeout: 15_000 }).toBe('disabled');
    const reasons = await row.locator('.reasons').innerText();
    expect(reasons).toContain('disabled by the console test (admin API) at ');
    expect(reasons).toContain(': receiver maintenance until 14:00; its events wait in its topics until it is enabled');
    expect(await row.locator('[data-lifecycle]').getAttribute('data-lifecycle')).toBe('disabled');
    expect(await row.locator('.transitions').innerText()).toMatch(/disabled by the console test \(admin API\): receiver maintenance until 14:00/);
    expect(receiver.requests.filter((r) => r.path === '/ok').length).toBe(okBefore);
    await shot('destination-disabled');

    await row.locator('button[data-action="enable"]').click();
    await expect.poll(() => row.locator('[data-lifecycle]').getAttribute('data-lifecycle'), { timeout: 30_000 }).toBe('active');
    expect(await row.getAttribute('data-health')).not.toBe('disabled');
    expect(await row.locator('.transitions').innerText()).toMatch(/enabled by console \(admin API\)/);
    expect(await row.locator('button[data-action="disable"]').isVisible()).toBe(true);
    await waitFor(() => receiver.requests.some((r) => r.path === '/ok' && r.text.includes('"messageId":"c-while-disabled"')), { timeoutMs: 60_000, what: 'the event that waited to reach hooks-ok' });
    type Doc = { destinations: { id: string; lifecycle: { state: string; history: { type: string; by?: string }[] } }[] };
    const doc = await api<Doc>('/v1/destinations');
    const ok = doc.destinations.find((d) => d.id === 'hooks-ok')!;
    expect(ok.lifecycle.state).toBe('active');
    expect(ok.lifecycle.history.map((h) => [h.type, h.by])).toEqual([
      ['destination.disabled', 'the console test (admin API)'],
      ['destination.enabled', 'console (admin API)'],
    ]);
    await shot('destination-enabled');
  });
});
