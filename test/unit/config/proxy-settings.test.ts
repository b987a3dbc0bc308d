// `delivery.proxy`, `settings.proxy` and the proxy of the environment
// (docs/webhooks.md#egress-proxy): what loads, what wins, and the proxy's password never printed.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { maskConfig, secretsOf } from '../../../src/config/mask.js';

const FILE = 'test.yaml';

function load(delivery: Record<string, unknown>, env: Record<string, string> = {}) {
  const doc = { delivery, sources: [{ id: 'web', destinations: ['hooks'] }], destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://127.0.0.1:9/in' }] } }] };
  return parseConfigText(stringify(doc), FILE, env);
}

describe('egress proxy settings', () => {
  it('delivery.proxy loads with noProxy [] by default, and wins over the environment', () => {
    const loaded = load({ proxy: { url: 'http://127.0.0.1:3128' } }, { HTTPS_PROXY: 'http://127.0.0.2:3128' });
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    expect(loaded.config.delivery.proxy).toEqual({ url: 'http://127.0.0.1:3128', noProxy: [] });
  });

  it.each([
    [{ HTTPS_PROXY: 'http://127.0.0.1:3128', NO_PROXY: 'internal.test, .svc.cluster.local,10.0.0.1:8443' }, { url: 'http://127.0.0.1:3128', noProxy: ['internal.test', '.svc.cluster.local', '10.0.0.1:8443'], fromEnvironment: true }],
    [{ http_proxy: 'http://127.0.0.1:8080' }, { url: 'http://127.0.0.1:8080', noProxy: [], fromEnvironment: true }],
    [{ HTTPS_PROXY: 'http://127.0.0.1:1', HTTP_PROXY: 'http://127.0.0.1:2' }, { url: 'http://127.0.0.1:1', noProxy: [], fromEnvironment: true }],
  ])('without delivery.proxy, the environment %j gives %j', (env, proxy) => {
    const loaded = load({}, env);
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    expect(loaded.config.delivery.proxy).toEqual(proxy);
  });

  it('no proxy anywhere: none', () => {
    const loaded = load({}, { NO_PROXY: 'internal.test' });
    expect(loaded.ok && loaded.config.delivery.proxy).toBeUndefined();
  });

  it.each([
    [{ proxy: { url: 'socks5://127.0.0.1:1080' } }, {}, 'delivery.proxy.url: must be an http:// or https:// URL of the proxy, not "socks5:"'],
    [{ proxy: { url: 'http://127.0.0.1:3128', bypass: [] } }, {}, 'delivery.proxy.bypass: unknown key "bypass"'],
    [{}, { HTTPS_PROXY: 'proxy:3128' }, 'delivery.proxy: comes from HTTPS_PROXY or HTTP_PROXY, which is not an http:// or https:// URL'],
  ])('refuses %j with env %j', (delivery, env, message) => {
    const loaded = load(delivery, env);
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.errors.some((e) => e.startsWith(`${FILE}: ${message}`)), loaded.errors.join('\n')).toBe(true);
  });

  it('a proxy password is printed as the origin only and scrubbed from logs', () => {
    const loaded = load({}, { HTTPS_PROXY: 'http://egress:proxy-pass-5e1d@127.0.0.1:3128' });
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    expect(JSON.stringify(maskConfig(loaded.config))).not.toContain('proxy-pass-5e1d');
    expect((maskConfig(loaded.config) as { delivery: { proxy: { url: string } } }).delivery.proxy.url).toBe('http://127.0.0.1:3128/****');
    expect(secretsOf(loaded.config)).toContain('proxy-pass-5e1d');
  });
});
