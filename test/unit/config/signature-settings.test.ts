// `settings.signing: custom` and lists of schemes, with `settings.signature`
// (docs/webhooks.md#custom-signatures): what loads and the path-qualified errors.
import { describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { parseConfigText } from '../../../src/config/load.js';
import { maskConfig } from '../../../src/config/mask.js';

const FILE = 'test.yaml';
const WHSEC = 'whsec_bmV3LXNlY3JldC1rZXktMjQtYnl0ZXMhIQ==';
const HUB = { header: 'X-Hub-Signature-256', algorithm: 'sha256', encoding: 'hex', prefix: 'sha256=' };

function withSettings(extra: Record<string, unknown>, headers: Record<string, string> = {}) {
  const doc = {
    sources: [{ id: 'web', destinations: ['hooks'] }],
    destinations: [{ id: 'hooks', type: 'webhooks', settings: { webhooks: [{ url: 'http://127.0.0.1:9/in', headers }], ...extra } }],
  };
  return parseConfigText(stringify(doc), FILE, { LEGACY: 'legacy-secret-31c7' });
}

function errorsOf(extra: Record<string, unknown>, headers: Record<string, string> = {}): string[] {
  const loaded = withSettings(extra, headers);
  return loaded.ok ? [] : loaded.errors;
}

describe('settings.signing and settings.signature', () => {
  it('loads custom (content {body} by default) and [standard, custom] with the custom key in signature.secret', () => {
    const one = withSettings({ signing: 'custom', sharedSecret: 'plain-secret', signature: HUB });
    if (!one.ok) throw new Error(one.errors.join('\n'));
    expect(one.config.destinations[0]!.settings.signature).toEqual({ ...HUB, content: '{body}' });
    const dual = withSettings({ signing: ['standard', 'custom'], sharedSecret: WHSEC, signature: { ...HUB, secret: '${LEGACY}', content: '{timestamp}.{body}', timestampHeader: 'X-Hub-Timestamp' } });
    if (!dual.ok) throw new Error(dual.errors.join('\n'));
    expect(dual.config.destinations[0]!.settings.signing).toEqual(['standard', 'custom']);
    expect(dual.config.destinations[0]!.settings.signature?.secret).toBe('legacy-secret-31c7');
    expect(JSON.stringify(maskConfig(dual.config))).not.toContain('legacy-secret-31c7');
  });

  it.each([
    [{ signing: 'custom', sharedSecret: 's' }, 'destinations[0].settings.signing: signing: custom needs settings.signature { header, algorithm, encoding, content }; see docs/webhooks.md#custom-signatures'],
    [{ signing: 'custom', signature: HUB }, 'destinations[0].settings.signing: signing: custom needs a key; set sharedSecret, or signature.secret'],
    [{ sharedSecret: 's', signature: HUB }, 'destinations[0].settings.signature: is used only with signing: custom (or a list holding custom); add custom to signing or remove signature'],
    [{ signing: ['segment', 'segment'], sharedSecret: 's' }, 'destinations[0].settings.signing[1]: lists segment twice; list each scheme once'],
    [{ signing: ['standard', 'svix'], sharedSecret: WHSEC }, 'destinations[0].settings.signing[1]: must be one of segment, standard, custom, got "svix"'],
    [{ signing: ['standard', 'custom'], sharedSecret: 'plain', signature: HUB }, 'destinations[0].settings.sharedSecret: is not a Standard Webhooks secret'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, algorithm: 'md5' } }, 'destinations[0].settings.signature.algorithm: must be one of sha1, sha256, sha512, got "md5"'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, content: '{timestamp}.{payload}' } }, 'destinations[0].settings.signature.content: "{timestamp}.{payload}" holds {payload}; the placeholders are {id}, {timestamp}, {body}'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, content: '{id}.{timestamp}' } }, 'destinations[0].settings.signature.content: "{id}.{timestamp}" has no {body}'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, content: '{timestamp}.{body}' } }, 'destinations[0].settings.signature.content: uses {timestamp}; set signature.timestampHeader'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, content: '{id}.{body}' } }, 'destinations[0].settings.signature.content: uses {id}; set signature.idHeader'],
    [{ signing: ['segment', 'custom'], sharedSecret: 's', signature: { ...HUB, header: 'X-Signature' } }, 'destinations[0].settings.signature.header: header "X-Signature" is set by signing: segment; choose another name'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, header: 'Content-Type' } }, 'destinations[0].settings.signature.header: header "Content-Type" is a header Switchyard or the HTTP client sets; choose another name'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, header: 'X-A', timestampHeader: 'x-a' } }, 'destinations[0].settings.signature.timestampHeader: header "x-a" is signature.header; choose another name'],
    [{ signing: 'custom', sharedSecret: 's', signature: { ...HUB, header: 'bad header' } }, 'destinations[0].settings.signature.header: "bad header" is not a legal HTTP header name'],
  ])('refuses %j', (settings, message) => {
    const errors = errorsOf(settings);
    expect(errors.some((e) => e.startsWith(`${FILE}: ${message}`)), errors.join('\n')).toBe(true);
  });

  it('X-Signature is free for custom when segment is not in use; a static header of the same name is not', () => {
    expect(errorsOf({ signing: 'custom', sharedSecret: 's', signature: { ...HUB, header: 'X-Signature' } })).toEqual([]);
    expect(errorsOf({ signing: 'custom', sharedSecret: 's', signature: HUB }, { 'x-hub-signature-256': 'fixed-value-9d' }).join('\n')).toBe(
      `${FILE}: destinations[0].settings.signature.header: header "X-Hub-Signature-256" is a static header of a webhook entry; choose another name`,
    );
  });
});
