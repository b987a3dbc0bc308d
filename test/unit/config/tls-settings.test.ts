// `settings.tls` (docs/webhooks.md#tls): the PEM files read at load into the config,
// and the errors that name the key, the file and what is wrong with it.
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { maskConfig, secretsOf } from '../../../src/config/mask.js';
import { connectionProfile } from '../../../src/delivery/destination-settings.js';
import { createTestPki } from '../../support/test-pki.js';

const pki = createTestPki();
afterAll(() => pki.remove());
const FILE = `${pki.dir}/switchyard.yaml`;

function withTls(tls: Record<string, unknown>) {
  const doc = {
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'https://127.0.0.1:9/in' }], tls } }],
  };
  return parseConfigText(stringify(doc), FILE, {});
}

describe('settings.tls', () => {
  it('reads the files (relative paths from the config file’s folder) and keeps the paths as written', () => {
    const loaded = withTls({ clientCert: 'client.crt', clientKey: pki.client.key, ca: 'ca.crt', serverName: 'hooks.internal', minVersion: 'TLSv1.3' });
    if (!loaded.ok) throw new Error(loaded.errors.join('\n'));
    const tls = loaded.config.destinations[0]!.settings.tls!;
    expect(tls).toMatchObject({ clientCert: 'client.crt', clientKey: pki.client.key, ca: 'ca.crt', serverName: 'hooks.internal', minVersion: 'TLSv1.3' });
    expect(tls.material?.cert).toBe(pki.read(pki.client.cert).toString('utf8'));
    expect(tls.material?.key).toBe(pki.read(pki.client.key).toString('utf8'));
    expect(tls.material?.ca).toBe(pki.read(pki.ca.cert).toString('utf8'));
    expect(tls.material?.certExpiresAtMs).toBeGreaterThan(Date.now());
    // check-config prints the paths, never the key; the log scrubber knows the key.
    expect(JSON.stringify(maskConfig(loaded.config))).not.toContain('PRIVATE KEY');
    expect(secretsOf(loaded.config)).toContain(tls.material?.key);
    const profile = connectionProfile(tls)!;
    expect(profile.tls).toEqual({ cert: tls.material?.cert, key: tls.material?.key, ca: tls.material?.ca, servername: 'hooks.internal', minVersion: 'TLSv1.3' });
    expect(profile.key).toMatch(/^[0-9a-f]{64}$/);
    expect(connectionProfile({ ...tls })!.key).toBe(profile.key);
  });

  it.each([
    [{ clientCert: 'client.crt' }, 'destinations[0].settings.tls.clientKey: clientCert and clientKey go together'],
    [{ clientCert: 'missing.crt', clientKey: 'client.key' }, `destinations[0].settings.tls.clientCert: ${pki.dir}/missing.crt: no such file; mount the file there or fix the path`],
    [{ clientCert: 'client.crt', clientKey: 'stranger.key' }, 'destinations[0].settings.tls.clientKey: stranger.key: is not the private key of the certificate in client.crt'],
    [{ clientCert: 'client.key', clientKey: 'client.key' }, 'destinations[0].settings.tls.clientCert: client.key: is not a PEM certificate'],
    [{ ca: 'client.key' }, 'destinations[0].settings.tls.ca: client.key: is not a PEM certificate'],
    [{ ca: 'ca.crt', minVersion: 'TLSv1.1' }, 'destinations[0].settings.tls.minVersion: must be one of TLSv1.2, TLSv1.3, got "TLSv1.1"'],
  ])('refuses %j', (tls, message) => {
    const loaded = withTls(tls);
    expect(loaded.ok).toBe(false);
    if (loaded.ok) return;
    expect(loaded.errors.some((e) => e.startsWith(`${FILE}: ${message}`)), loaded.errors.join('\n')).toBe(true);
    expect(loaded.errors.join('\n')).not.toContain('PRIVATE KEY');
  });
});
