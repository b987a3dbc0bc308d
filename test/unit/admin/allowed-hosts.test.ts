import { describe, expect, it } from 'vitest';
import { hostAllowed, hostNameOf } from '../../../src/admin/allowed-hosts.js';

const OWN = new Set(['switchyard-7f9c', '10.4.0.12', 'fd00::12']);

describe('hostNameOf', () => {
  it.each<[string | undefined, string | undefined]>([
    ['localhost:9464', 'localhost'],
    ['LOCALHOST', 'localhost'],
    ['[::1]:9464', '::1'],
    ['[::1]', '::1'],
    ['example.com.:9464', 'example.com'],
    ['', undefined],
    [':9464', undefined],
    ['[]:1', undefined],
    [undefined, undefined],
  ])('%j → %j', (header, name) => {
    expect(hostNameOf(header)).toBe(name);
  });
});

describe('hostAllowed', () => {
  it.each<[string | undefined, boolean]>([
    ['127.0.0.1:9464', true],
    ['127.8.0.1', true],
    ['localhost:9464', true],
    ['app.localhost', true],
    ['[::1]:9464', true],
    ['switchyard-7f9c:9464', true],
    ['10.4.0.12:9464', true],
    ['[fd00::12]:9464', true],
    ['admin.monitoring.svc:9464', true],
    ['ADMIN.monitoring.svc', true],
    // A page that rebinds its own name to this address sends that name.
    ['rebind.attacker.example:9464', false],
    ['localhost.attacker.example', false],
    ['10.4.0.13:9464', false],
    ['', false],
    // HTTP/1.0 without Host: no browser sends that.
    [undefined, true],
  ])('%j → %j', (header, allowed) => {
    expect(hostAllowed(header, OWN, ['admin.monitoring.svc'])).toBe(allowed);
  });
});
