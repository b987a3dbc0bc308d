// The Kubernetes manifests agree with the daemon: the config files they ship load
// with the real loader, ports and probes match the config, the KEDA triggers watch
// the consumer groups and topics the code really uses, and the pods run as the
// image's non-root user with the config hot-reloadable. Reads the YAML files as
// written (no kustomize needed); scripts/validate-manifests.sh renders them and
// checks them against the API schemas.
import { existsSync, readFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { loadConfigFile } from '../../../src/config/load.js';
import type { Config } from '../../../src/config/schema.js';
import { delivererGroupId } from '../../../src/delivery/deliverer-service.js';
import { routerGroupId } from '../../../src/router/router-service.js';
import { topicNames } from '../../../src/runtime/topics.js';

const ROOT = resolve(import.meta.dirname, '..', '..', '..');
const BASE = resolve(ROOT, 'deploy/kubernetes/base');
const OVERLAY = resolve(ROOT, 'deploy/kubernetes/overlays/example');
const ROLES = ['gateway', 'router', 'deliverer'] as const;
const CONFIG_DIR = '/etc/switchyard';
const IMAGE_UID = 10001; // the Dockerfile's USER

type Doc = Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any -- free-form manifests

function readDocs(file: string): Doc[] {
  return parseAllDocuments(readFileSync(file, 'utf8')).map((doc) => doc.toJS() as Doc);
}

/** Every object of a kustomization's `resources` (files and nested kustomizations). */
function kustomizationObjects(dir: string): Doc[] {
  const kustomization = readDocs(resolve(dir, 'kustomization.yaml'))[0]!;
  return ((kustomization.resources ?? []) as string[]).flatMap((entry) => {
    const path = resolve(dir, entry);
    return existsSync(resolve(path, 'kustomization.yaml')) ? kustomizationObjects(path) : readDocs(path);
  });
}

function find(objects: Doc[], kind: string, name: string): Doc {
  const found = objects.find((o) => o.kind === kind && o.metadata?.name === name);
  if (!found) throw new Error(`no ${kind}/${name} in the manifests`);
  return found;
}

/** KEY=value lines of a kustomize env file. */
function envFile(file: string): Record<string, string> {
  const entries = readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.trim() !== '' && !line.trimStart().startsWith('#'))
    .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const);
  return Object.fromEntries(entries);
}

const baseObjects = kustomizationObjects(BASE);
const overlayKustomization = readDocs(resolve(OVERLAY, 'kustomization.yaml'))[0]!;
const secretEnvFiles = (overlayKustomization.secretGenerator as Doc[]).find((g) => g.name === 'switchyard-secrets')!.envs as string[];
const exampleSecrets = Object.assign({}, ...secretEnvFiles.map((f) => envFile(resolve(OVERLAY, f)))) as Record<string, string>;
const brokersLiteral = (readDocs(resolve(BASE, 'kustomization.yaml'))[0]!.configMapGenerator as Doc[])
  .find((g) => g.name === 'switchyard-env')!
  .literals.find((l: string) => l.startsWith('KAFKA_BROKERS=')) as string;
/** An admin token an operator would generate (`openssl rand -hex 32`) in place of the CHANGE-ME placeholder. */
const GENERATED_ADMIN_TOKEN = '9b1f0c5e7a3d48f2b6e0a4c8d2f61e3a9b7c5d1e0f2a4b6c8d0e2f4a6b8c0d2e';
// What a pod's environment holds: the Secret's keys and KAFKA_BROKERS, nothing else
// (the admin token replaced as the Secret's comment asks; the placeholder is refused below).
const podEnv = { ...exampleSecrets, SWITCHYARD_ADMIN_TOKEN: GENERATED_ADMIN_TOKEN, KAFKA_BROKERS: brokersLiteral.slice('KAFKA_BROKERS='.length) };

function loadOrFail(file: string): Config {
  const result = loadConfigFile(file, podEnv);
  if (!result.ok) throw new Error(`${file} does not load with the pod's environment:\n${result.errors.join('\n')}`);
  return result.config;
}

const baseConfig = loadOrFail(resolve(BASE, 'switchyard.yaml'));
const overlayConfig = loadOrFail(resolve(OVERLAY, 'switchyard.yaml'));

describe('the shipped config files', () => {
  it('load with the real loader using only the example Secret and KAFKA_BROKERS', () => {
    // loadOrFail threw already if a ${NAME} had no value; check the values arrived.
    expect(overlayConfig.admin.token).toBe(GENERATED_ADMIN_TOKEN);
    expect(overlayConfig.kafka.brokers).toEqual(podEnv.KAFKA_BROKERS.split(','));
    expect(baseConfig.destinations.map((d) => d.id)).toEqual(['hooks-main']);
    expect(overlayConfig.destinations.map((d) => d.id)).toEqual(['hooks-main', 'hooks-audit']);
  });

  it('bind the admin port to the pod address (kubelet probes, Prometheus), so the placeholder admin token is refused at start', () => {
    expect(baseConfig.admin.host).toBe('0.0.0.0');
    expect(overlayConfig.admin.host).toBe('0.0.0.0');
    for (const dir of [BASE, OVERLAY]) {
      const result = loadConfigFile(resolve(dir, 'switchyard.yaml'), { ...podEnv, SWITCHYARD_ADMIN_TOKEN: exampleSecrets.SWITCHYARD_ADMIN_TOKEN });
      expect(result.ok).toBe(false);
      expect(!result.ok && result.errors.join('\n')).toMatch(/admin\.token: is a placeholder from the examples and admin\.host is "0\.0\.0\.0"/);
    }
  });

  it('mark every example secret value as a placeholder', () => {
    expect(Object.keys(exampleSecrets).length).toBeGreaterThan(0);
    expect(Object.entries(exampleSecrets).filter(([, value]) => !value.startsWith('CHANGE-ME'))).toEqual([]);
  });

  it('keep the config ConfigMap name stable (hot reload) and roll pods on env changes', () => {
    const generators = readDocs(resolve(BASE, 'kustomization.yaml'))[0]!.configMapGenerator as Doc[];
    expect(generators.find((g) => g.name === 'switchyard-config')?.options?.disableNameSuffixHash).toBe(true);
    expect(generators.find((g) => g.name === 'switchyard-env')?.options?.disableNameSuffixHash).toBeUndefined();
    const overlayConfigGen = (overlayKustomization.configMapGenerator as Doc[]).find((g) => g.name === 'switchyard-config');
    expect(overlayConfigGen).toMatchObject({ behavior: 'replace', options: { disableNameSuffixHash: true } });
  });
});

describe.each(ROLES)('the %s Deployment', (role) => {
  const deployment = find(baseObjects, 'Deployment', `switchyard-${role}`);
  const pod = deployment.spec.template.spec;
  const container = pod.containers[0];
  const port = (name: string): number | undefined => container.ports.find((p: Doc) => p.name === name)?.containerPort;

  it('runs `switchyard <role> --config` on the mounted config directory, never a subPath', () => {
    expect(pod.containers).toHaveLength(1);
    expect(container.image).toBe('switchyard');
    expect(container.command).toBeUndefined(); // the image's entrypoint is switchyard
    expect(container.args).toEqual([role, '--config', `${CONFIG_DIR}/switchyard.yaml`]);
    const mount = container.volumeMounts.find((m: Doc) => m.mountPath === CONFIG_DIR);
    expect(mount).toMatchObject({ readOnly: true });
    expect(container.volumeMounts.filter((m: Doc) => m.subPath !== undefined)).toEqual([]);
    expect(pod.volumes.find((v: Doc) => v.name === mount.name)?.configMap?.name).toBe('switchyard-config');
  });

  it('gets secrets from the Secret and KAFKA_BROKERS from the env ConfigMap', () => {
    expect(container.envFrom).toEqual([{ secretRef: { name: 'switchyard-secrets' } }]);
    expect(container.env.find((e: Doc) => e.name === 'KAFKA_BROKERS')?.valueFrom).toEqual({
      configMapKeyRef: { name: 'switchyard-env', key: 'KAFKA_BROKERS' },
    });
  });

  it('probes /healthz and /readyz on the admin port of the config', () => {
    expect(port('admin')).toBe(baseConfig.admin.port);
    expect(port('admin')).toBe(overlayConfig.admin.port);
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' });
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'admin' });
    expect(container.startupProbe.httpGet).toEqual({ path: '/healthz', port: 'admin' });
  });

  it('gives the drain time to finish before SIGKILL', () => {
    const preStopSeconds = Number(container.lifecycle?.preStop?.exec?.command?.[1] ?? 0);
    expect(pod.terminationGracePeriodSeconds).toBe(40);
    for (const config of [baseConfig, overlayConfig]) {
      expect(pod.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopSeconds * 1000 + config.shutdownTimeoutMs);
    }
  });

  it('runs as the image user, non-root, read-only, without privileges', () => {
    expect(pod.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: IMAGE_UID, seccompProfile: { type: 'RuntimeDefault' } });
    expect(container.securityContext).toMatchObject({
      runAsNonRoot: true,
      runAsUser: IMAGE_UID,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    expect(pod.serviceAccountName).toBe('switchyard');
    expect(pod.automountServiceAccountToken).toBe(false);
    expect(find(baseObjects, 'ServiceAccount', 'switchyard').automountServiceAccountToken).toBe(false);
  });

  it('has requests and limits, and leaves the replica count to its autoscaler', () => {
    for (const kind of ['requests', 'limits']) {
      expect(container.resources[kind]).toMatchObject({ cpu: expect.any(String), memory: expect.any(String) });
    }
    expect(deployment.spec.replicas).toBeUndefined();
  });

  it('selects its own pods, with a PodDisruptionBudget on the same selector', () => {
    const selector = deployment.spec.selector.matchLabels;
    expect(selector).toEqual({ 'app.kubernetes.io/name': 'switchyard', 'app.kubernetes.io/component': role });
    expect(deployment.spec.template.metadata.labels).toMatchObject(selector);
    expect(find(baseObjects, 'PodDisruptionBudget', `switchyard-${role}`).spec.selector.matchLabels).toEqual(selector);
  });
});

describe('the gateway Service', () => {
  it('serves the gateway port of the config on port 80', () => {
    const deployment = find(baseObjects, 'Deployment', 'switchyard-gateway');
    const container = deployment.spec.template.spec.containers[0];
    const http = container.ports.find((p: Doc) => p.name === 'http')?.containerPort;
    expect(http).toBe(baseConfig.gateway.port);
    expect(http).toBe(overlayConfig.gateway.port);
    const service = find(baseObjects, 'Service', 'switchyard-gateway');
    expect(service.spec.ports).toEqual([{ name: 'http', port: 80, targetPort: 'http', protocol: 'TCP' }]);
    expect(service.spec.selector).toEqual(deployment.spec.selector.matchLabels);
  });

  it('is the only way in: consumers expose no http port', () => {
    for (const role of ['router', 'deliverer']) {
      const ports = find(baseObjects, 'Deployment', `switchyard-${role}`).spec.template.spec.containers[0].ports as Doc[];
      expect(ports.map((p) => p.name)).toEqual(['admin']);
    }
  });
});

describe('autoscaling', () => {
  type Trigger = { type: string; metadata: Record<string, string> };
  const triggers = (object: Doc): Trigger[] => object.spec.triggers as Trigger[];

  it('scales the gateway on CPU with an HPA', () => {
    const hpa = find(baseObjects, 'HorizontalPodAutoscaler', 'switchyard-gateway');
    expect(hpa.apiVersion).toBe('autoscaling/v2');
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: 'apps/v1', kind: 'Deployment', name: 'switchyard-gateway' });
    expect(hpa.spec.metrics).toEqual([{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 70 } } }]);
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(2);
  });

  it.each(['router', 'deliverer'])('scales the %s with KEDA, at most one pod per partition', (role) => {
    const scaled = find(baseObjects, 'ScaledObject', `switchyard-${role}`);
    expect(scaled.apiVersion).toBe('keda.sh/v1alpha1');
    expect(scaled.spec.scaleTargetRef).toMatchObject({ kind: 'Deployment', name: `switchyard-${role}`, envSourceContainerName: 'switchyard' });
    expect(scaled.spec.minReplicaCount).toBeGreaterThanOrEqual(1);
    expect(scaled.spec.maxReplicaCount).toBeLessThanOrEqual(Math.min(baseConfig.kafka.partitions, overlayConfig.kafka.partitions));
  });

  it("watches the router's consumer group on calls and deletions", () => {
    const topics = topicNames(baseConfig.kafka.topicPrefix);
    const scaled = find(baseObjects, 'ScaledObject', 'switchyard-router');
    for (const trigger of triggers(scaled)) {
      expect(trigger.type).toBe('kafka');
      expect(trigger.metadata.bootstrapServersFromEnv).toBe('KAFKA_BROKERS');
      expect(Number(trigger.metadata.lagThreshold)).toBeGreaterThan(0);
    }
    const watched = triggers(scaled).map((t) => [t.metadata.consumerGroup, t.metadata.topic]);
    expect(watched).toEqual([
      [routerGroupId(baseConfig), topics.calls],
      [routerGroupId(baseConfig), topics.deletions],
    ]);
    expect(routerGroupId(baseConfig)).toBe(routerGroupId(overlayConfig));
    expect(baseConfig.kafka.topicPrefix).toBe(overlayConfig.kafka.topicPrefix);
  });

  it("scales the deliverer on one trigger: its one group's lag on the main topics, retry tiers and DLQ left out", () => {
    const scaled = find(baseObjects, 'ScaledObject', 'switchyard-deliverer');
    const [trigger, ...others] = triggers(scaled);
    expect(others).toEqual([]);
    expect(trigger!.type).toBe('prometheus');
    const query = trigger!.metadata.query!;
    // The group every deliverer pod joins, whatever the destinations.
    for (const config of [baseConfig, overlayConfig]) expect(query).toContain(`group="${delivererGroupId(config)}"`);
    expect(query).toMatch(/^sum\(max by \(topic\) \(switchyard_consumer_lag\{/);
    expect(query).toContain('job="switchyard"');
    expect(query).toContain('topic!~".*[.]retry[.].*|.*[.]dlq"');
    expect(Number(trigger!.metadata.threshold)).toBeGreaterThan(0);
    expect(trigger!.metadata.serverAddress).toMatch(/^https?:\/\//);
    expect(scaled.spec.fallback.replicas).toBeGreaterThanOrEqual(scaled.spec.minReplicaCount);
  });

  it('has no per-destination deliverer triggers in the example overlay', () => {
    expect(existsSync(resolve(OVERLAY, 'deliverer-triggers.yaml'))).toBe(false);
    const patches = (overlayKustomization.patches ?? []) as Doc[];
    expect(patches.filter((p) => p.target?.kind === 'ScaledObject' || String(p.path ?? '').includes('trigger'))).toEqual([]);
  });
});

describe('monitoring', () => {
  it('scrapes the admin port of every role as job="switchyard" (what the dashboard and alerts select)', () => {
    const monitor = find(baseObjects, 'PodMonitor', 'switchyard');
    expect(monitor.apiVersion).toBe('monitoring.coreos.com/v1');
    expect(monitor.spec.jobLabel).toBe('app.kubernetes.io/name');
    expect(monitor.spec.selector.matchLabels).toEqual({ 'app.kubernetes.io/name': 'switchyard' });
    expect(monitor.spec.podMetricsEndpoints).toMatchObject([{ port: 'admin', path: '/metrics' }]);
    for (const role of ROLES) {
      const labels = find(baseObjects, 'Deployment', `switchyard-${role}`).spec.template.metadata.labels;
      expect(labels['app.kubernetes.io/name']).toBe('switchyard');
    }
  });

  it('ships the alert rules with the base', () => {
    expect(find(baseObjects, 'PrometheusRule', 'switchyard').spec.groups.length).toBeGreaterThan(0);
  });
});

describe('the example NetworkPolicies', () => {
  const policies = kustomizationObjects(OVERLAY).filter((o) => o.kind === 'NetworkPolicy');
  /** The policies that select a role's pods (by its Deployment's pod labels). */
  const selecting = (role: (typeof ROLES)[number], type: 'Ingress' | 'Egress') => {
    const labels = find(baseObjects, 'Deployment', `switchyard-${role}`).spec.template.metadata.labels as Record<string, string>;
    return policies.filter(
      (p) => (p.spec.policyTypes as string[]).includes(type) && Object.entries(p.spec.podSelector.matchLabels as Record<string, string>).every(([k, v]) => labels[k] === v),
    );
  };
  const ports = (rules: Doc[]) => rules.flatMap((r) => ((r.ports ?? []) as Doc[]).map((p) => `${p.port}/${p.protocol}`)).sort();
  const overlayBrokers = (overlayKustomization.configMapGenerator as Doc[])
    .find((g) => g.name === 'switchyard-env')!
    .literals.find((l: string) => l.startsWith('KAFKA_BROKERS='))
    .slice('KAFKA_BROKERS='.length)
    .split(',') as string[];

  it('let producers reach the gateway port and only the monitoring namespace the admin port', () => {
    expect(ports(selecting('gateway', 'Ingress').flatMap((p) => p.spec.ingress as Doc[]))).toEqual([`${overlayConfig.admin.port}/TCP`, `${overlayConfig.gateway.port}/TCP`].sort());
    for (const role of ['router', 'deliverer'] as const) {
      const ingress = selecting(role, 'Ingress').flatMap((p) => p.spec.ingress as Doc[]);
      expect(ports(ingress), role).toEqual([`${overlayConfig.admin.port}/TCP`]);
      expect(ingress.map((r) => r.from)).toEqual([[{ namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } } }]]);
    }
  });

  it('let every role reach DNS and the Kafka brokers of KAFKA_BROKERS, and only the deliverer the webhooks', () => {
    const kafkaPorts = [...new Set(overlayBrokers.map((b) => `${b.slice(b.lastIndexOf(':') + 1)}/TCP`))];
    const kafkaNamespaces = [...new Set(overlayBrokers.map((b) => b.split('.')[2]))];
    for (const role of ROLES) {
      const egress = selecting(role, 'Egress').flatMap((p) => p.spec.egress as Doc[]);
      const expected = ['53/TCP', '53/UDP', ...kafkaPorts, ...(role === 'deliverer' ? ['443/TCP', '80/TCP'] : [])].sort();
      expect(ports(egress), role).toEqual(expected);
      const kafkaRule = egress.find((r) => ports([r]).join() === kafkaPorts.join())!;
      expect(kafkaRule.to.map((t: Doc) => t.namespaceSelector.matchLabels['kubernetes.io/metadata.name'])).toEqual(kafkaNamespaces);
    }
  });
});

describe('the kustomizations', () => {
  it.each([BASE, OVERLAY, resolve(ROOT, 'deploy/prometheus'), resolve(ROOT, 'deploy/grafana')])('%s lists only files that exist', (dir) => {
    const kustomization = readDocs(resolve(dir, 'kustomization.yaml'))[0]!;
    const files = [
      ...((kustomization.resources ?? []) as string[]),
      ...((kustomization.patches ?? []) as Doc[]).flatMap((p) => (p.path ? [p.path as string] : [])),
      ...[...((kustomization.configMapGenerator ?? []) as Doc[]), ...((kustomization.secretGenerator ?? []) as Doc[])].flatMap((g) => [
        ...((g.files ?? []) as string[]),
        ...((g.envs ?? []) as string[]),
      ]),
    ];
    expect(files.filter((file) => !existsSync(resolve(dir, file)))).toEqual([]);
    expect(dirname(resolve(dir, 'kustomization.yaml'))).toBe(dir);
  });
});
