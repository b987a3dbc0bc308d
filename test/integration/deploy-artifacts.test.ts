// The Grafana dashboard and the alert rules may only use metrics the daemon really
// exports. This starts the real admin server, scrapes /metrics over HTTP and checks
// every PromQL expression of deploy/ against the families it lists, so renaming a
// metric in src/observability/metrics.ts without updating deploy/ (or the reverse)
// fails here. Needs no broker. Full schema and promtool checks:
// scripts/validate-manifests.sh.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { createAdminServer } from '../../src/admin/admin-server.js';
import type { AdminServer } from '../../src/admin/admin-server.js';
import { silentLogger } from '../../src/observability/logger.js';
import { createMetrics } from '../../src/observability/metrics.js';
import { exportedSeriesNames, grafanaQueryMetricNames, promqlMetricNames } from '../support/promql-names.js';

const ROOT = resolve(import.meta.dirname, '..', '..');
const DASHBOARD_FILE = resolve(ROOT, 'deploy/grafana/switchyard-dashboard.json');
const ALERTS_FILE = resolve(ROOT, 'deploy/prometheus/alerts.yaml');

/** Series from outside the daemon that the artifacts may use: Prometheus' own and kube-state-metrics'. */
const EXTERNAL_SERIES = new Set([
  'up',
  'kube_deployment_status_replicas_available',
  'kube_deployment_spec_replicas',
  'kube_pod_container_status_restarts_total',
]);

/** docs/metrics.md: every contract metric should have a place on the dashboard. */
const CONTRACT_SERIES = [
  'switchyard_calls_received_total',
  'switchyard_calls_invalid_total',
  'switchyard_events_routed_total',
  'switchyard_events_filtered_total',
  'switchyard_delivery_attempts_total',
  'switchyard_deliveries_total',
  'switchyard_delivery_duration_seconds_bucket',
  'switchyard_end_to_end_seconds_bucket',
  'switchyard_retry_queue_depth',
  'switchyard_consumer_lag',
  'switchyard_audience_changes_total',
  'switchyard_audience_members',
  'switchyard_gateway_requests_total',
  'switchyard_circuit_state',
];

interface Target {
  expr?: unknown;
  refId?: string;
  datasource?: { type?: string; uid?: string };
}
interface Panel {
  id?: number;
  type?: string;
  title?: string;
  datasource?: { type?: string; uid?: string };
  targets?: Target[];
  panels?: Panel[];
  gridPos?: { h: number; w: number; x: number; y: number };
}
interface TemplateVariable {
  name: string;
  type: string;
  query?: string | { query?: string };
}
interface Dashboard {
  uid?: string;
  title?: string;
  schemaVersion?: number;
  panels: Panel[];
  templating: { list: TemplateVariable[] };
}
interface AlertRule {
  alert?: string;
  record?: string;
  expr?: unknown;
  for?: unknown;
  labels?: Record<string, unknown>;
  annotations?: Record<string, unknown>;
}
interface PrometheusRule {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string };
  spec?: { groups?: Array<{ name?: string; rules?: AlertRule[] }> };
}

/** Every panel, rows' nested panels (collapsed rows keep theirs) included. */
function allPanels(panels: Panel[]): Panel[] {
  return panels.flatMap((panel) => [panel, ...allPanels(panel.panels ?? [])]);
}

const dashboard = JSON.parse(readFileSync(DASHBOARD_FILE, 'utf8')) as Dashboard;
const rules = parse(readFileSync(ALERTS_FILE, 'utf8')) as PrometheusRule;
const panels = allPanels(dashboard.panels).filter((panel) => panel.type !== 'row');
const alertRules = (rules.spec?.groups ?? []).flatMap((group) => group.rules ?? []);

/** [where, expr] for every PromQL expression in deploy/. */
function expressions(): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const panel of panels) {
    for (const target of panel.targets ?? []) {
      out.push([`dashboard panel "${panel.title}" ${target.refId}`, String(target.expr)]);
    }
  }
  for (const rule of alertRules) out.push([`alert ${rule.alert}`, String(rule.expr)]);
  return out;
}

describe('deploy/ uses only metrics the daemon exports', () => {
  let admin: AdminServer;
  let exported: Set<string>;

  beforeAll(async () => {
    admin = createAdminServer({
      host: '127.0.0.1',
      port: 0,
      token: () => undefined,
      metrics: createMetrics(),
      logger: silentLogger(),
      health: () => [],
    });
    await admin.start();
    const response = await fetch(`http://127.0.0.1:${admin.port()}/metrics`);
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
    exported = exportedSeriesNames(await response.text());
  });

  afterAll(async () => {
    await admin?.stop();
  });

  it('scrapes the contract metrics and the default process metrics', () => {
    // If this fails the scrape, not the artifacts, is wrong: every check below relies on it.
    const missing = [...CONTRACT_SERIES, 'process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_eventloop_lag_p99_seconds'].filter(
      (name) => !exported.has(name),
    );
    expect(missing).toEqual([]);
    expect(exported.has('switchyard_end_to_end_seconds')).toBe(false); // a histogram has only _bucket/_sum/_count
  });

  it('every metric in the dashboard and the alert rules is exported (or an explicit external series)', () => {
    const unknown: string[] = [];
    for (const [where, expr] of expressions()) {
      for (const name of promqlMetricNames(expr)) {
        if (!exported.has(name) && !EXTERNAL_SERIES.has(name)) unknown.push(`${where}: ${name}`);
      }
    }
    for (const variable of dashboard.templating.list.filter((v) => v.type === 'query')) {
      const query = typeof variable.query === 'string' ? variable.query : (variable.query?.query ?? '');
      for (const name of grafanaQueryMetricNames(query)) {
        if (!exported.has(name) && !EXTERNAL_SERIES.has(name)) unknown.push(`dashboard variable $${variable.name}: ${name}`);
      }
    }
    expect(unknown).toEqual([]);
  });

  it('the dashboard shows every contract metric', () => {
    const used = new Set(panels.flatMap((panel) => (panel.targets ?? []).flatMap((t) => promqlMetricNames(String(t.expr)))));
    expect(CONTRACT_SERIES.filter((name) => !used.has(name))).toEqual([]);
  });
});

describe('the Grafana dashboard', () => {
  it('is a dashboard with a Prometheus data-source variable and a destination variable', () => {
    expect(dashboard.uid).toBe('switchyard-overview');
    expect(dashboard.schemaVersion).toBeGreaterThanOrEqual(36);
    const variables = new Map(dashboard.templating.list.map((v) => [v.name, v]));
    expect(variables.get('datasource')).toMatchObject({ type: 'datasource', query: 'prometheus' });
    expect(variables.get('destination')).toMatchObject({ type: 'query' });
    expect(variables.get('namespace')).toMatchObject({ type: 'query' });
  });

  it('has a non-empty expression in every target of every panel, on the ${datasource} variable', () => {
    expect(panels.length).toBeGreaterThanOrEqual(20);
    const problems: string[] = [];
    for (const panel of panels) {
      const targets = panel.targets ?? [];
      if (targets.length === 0) problems.push(`panel "${panel.title}" has no targets`);
      for (const target of targets) {
        if (typeof target.expr !== 'string' || target.expr.trim() === '') problems.push(`panel "${panel.title}" ${target.refId}: empty expr`);
        if (target.datasource?.uid !== '${datasource}') problems.push(`panel "${panel.title}" ${target.refId}: datasource is not \${datasource}`);
      }
      if (panel.datasource?.uid !== '${datasource}') problems.push(`panel "${panel.title}": datasource is not \${datasource}`);
      if (!panel.gridPos) problems.push(`panel "${panel.title}": no gridPos`);
    }
    expect(problems).toEqual([]);
  });

  it('has unique panel ids and reads histograms through histogram_quantile over _bucket', () => {
    const ids = allPanels(dashboard.panels).map((panel) => panel.id);
    expect(new Set(ids).size).toBe(ids.length);
    const quantiles = panels.flatMap((panel) => (panel.targets ?? []).map((t) => String(t.expr))).filter((expr) => expr.includes('histogram_quantile'));
    expect(quantiles.length).toBeGreaterThanOrEqual(6); // p50/p95/p99 of two histograms
    for (const expr of quantiles) expect(expr).toMatch(/histogram_quantile\(0\.\d+, sum by \(([a-z_]+, )*le\) \(rate\([a-z_]+_bucket\{/);
  });

  it('filters the destination panels by the $destination variable', () => {
    const perDestination = panels
      .flatMap((panel) => (panel.targets ?? []).map((t) => String(t.expr)))
      .filter((expr) => /switchyard_(deliver|events_|end_to_end|retry_queue)/.test(expr));
    expect(perDestination.length).toBeGreaterThan(0);
    expect(perDestination.filter((expr) => !expr.includes('destination=~"$destination"'))).toEqual([]);
  });
});

describe('the alert rules', () => {
  const REQUIRED_ALERTS = [
    'SwitchyardDeadLetters',
    'SwitchyardConsumerLagGrowing',
    'SwitchyardDeliverySuccessRateLow',
    'SwitchyardNoReadyPods',
    'SwitchyardGatewayErrorRatioHigh',
    'SwitchyardConfigReloadRefused',
    'SwitchyardLastRetryTierGrowing',
    'SwitchyardInvalidCallsSpike',
    'SwitchyardCircuitOpen',
  ];

  it('are a PrometheusRule with named groups of rules', () => {
    expect(rules).toMatchObject({ apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule', metadata: { name: 'switchyard' } });
    const groups = rules.spec?.groups ?? [];
    expect(groups.length).toBeGreaterThan(0);
    for (const group of groups) {
      expect(group.name).toMatch(/^switchyard\./);
      expect(group.rules?.length).toBeGreaterThan(0);
    }
  });

  it('cover dead letters, lag, success rate, pod readiness, gateway 5xx, refused reloads, the last retry tier, invalid calls and open circuits', () => {
    const names = alertRules.map((rule) => rule.alert);
    expect(names.filter((name) => !name?.startsWith('Switchyard'))).toEqual([]);
    expect(new Set(names).size).toBe(names.length);
    expect(REQUIRED_ALERTS.filter((name) => !names.includes(name))).toEqual([]);
  });

  it('each have an expr, a for, a severity and summary, description and runbook annotations', () => {
    const problems: string[] = [];
    for (const rule of alertRules) {
      const name = rule.alert ?? '(no name)';
      if (rule.record !== undefined) problems.push(`${name}: recording rules belong elsewhere`);
      if (typeof rule.expr !== 'string' || rule.expr.trim() === '') problems.push(`${name}: no expr`);
      if (typeof rule.for !== 'string' || !/^\d+[smh]$/.test(rule.for)) problems.push(`${name}: for must be a duration like 5m, got ${String(rule.for)}`);
      if (!['warning', 'critical'].includes(String(rule.labels?.severity))) problems.push(`${name}: severity must be warning or critical`);
      for (const key of ['summary', 'description', 'runbook']) {
        const value = rule.annotations?.[key];
        if (typeof value !== 'string' || value.trim() === '') problems.push(`${name}: no ${key} annotation`);
      }
    }
    expect(problems).toEqual([]);
  });
});
