// `delivery.blockPrivateNetworks` (docs/webhooks.md#the-address-guard) at the socket: for
// operators who let their own customers supply webhook URLs, so that nobody can point
// Switchyard at the cluster's internal services or the cloud's metadata endpoint. The
// rule itself (only global unicast addresses) is src/network/address-rule.ts; here it is
// applied where the socket connects, after DNS (http-sender.ts): a name that resolves to
// a public address when the config is checked and to 10.0.0.5 when the request goes out
// (DNS rebinding) is still refused, because the address checked is the one connected to.
import { lookup as dnsLookup } from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { describeRefusal, judgeAddress } from '../network/address-rule.js';
import type { AddressVerdict } from '../network/address-rule.js';

/** The `code` of a BlockedAddressError; classify.ts turns it into the `blocked` outcome. */
export const BLOCKED_ADDRESS_CODE = 'SWITCHYARD_BLOCKED_ADDRESS';

type Refusal = Extract<AddressVerdict, { allowed: false }>;

/** A connection refused by the guard: no request was sent. Permanent for the URL. */
export class BlockedAddressError extends Error {
  readonly code = BLOCKED_ADDRESS_CODE;
  readonly retriable = false;

  constructor(
    readonly host: string,
    readonly address: string,
    readonly refusal: Refusal | undefined,
  ) {
    const what = host === address ? address : `${host} resolves to ${address}`;
    // NOTE: fail closed: text the socket would take for an address but the rule cannot read.
    const why = refusal === undefined ? 'an address the guard cannot read' : describeRefusal(refusal);
    super(`not sent: ${what}, ${why}; delivery.blockPrivateNetworks refuses it`);
    this.name = 'BlockedAddressError';
  }
}

/** The error for a host that is itself a refused IP address, else undefined (a name, or an allowed address). */
export function refuseLiteralAddress(host: string): BlockedAddressError | undefined {
  const bare = host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
  const verdict = judgeAddress(bare);
  return verdict === undefined || verdict.allowed ? undefined : new BlockedAddressError(bare, bare, verdict);
}

/** A resolver with node's `dns.lookup` shape, asked for every address of a name. */
export type ResolveAll = (
  hostname: string,
  options: LookupOptions & { all: true },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/**
 * Where the socket connects once an address is let through: the address itself, except
 * in tests, which send every connection to a loopback listener so that a guard that fails
 * shows up as a request there, never as traffic leaving the machine.
 */
export type ConnectTo = (allowed: LookupAddress) => LookupAddress;

/**
 * A `lookup` for net.connect / tls.connect. With `guard`, it fails with
 * BlockedAddressError when any address the name resolves to is refused. NOTE: any, not
 * all: the socket may try each of them (happy eyeballs), so one refused address refuses
 * the name. An address the rule cannot read is refused too (fail closed).
 */
export function guardedLookup(options: { guard: boolean; resolve?: ResolveAll; connectTo?: ConnectTo }): LookupFunction {
  const resolve = options.resolve ?? dnsLookup;
  const connectTo = options.connectTo ?? ((address: LookupAddress) => address);
  return (hostname, lookupOptions, callback) => {
    resolve(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
      if (error) {
        callback(error, '', undefined);
        return;
      }
      if (options.guard) {
        for (const { address } of addresses) {
          const verdict = judgeAddress(address);
          if (verdict === undefined || !verdict.allowed) {
            callback(new BlockedAddressError(hostname, address, verdict), '', undefined);
            return;
          }
        }
      }
      const targets = addresses.map(connectTo);
      if (lookupOptions.all === true) {
        callback(null, targets);
        return;
      }
      const first = targets[0];
      if (first === undefined) {
        callback(Object.assign(new Error(`no address found for ${hostname}`), { code: 'ENOTFOUND' }), '', undefined);
        return;
      }
      callback(null, first.address, first.family);
    });
  };
}
