// `gateway` (docs/configuration.md#gateway): where the gateway listens.

import { nonEmptyText, port, strictObject } from './zod-fields.js';

export interface GatewayConfig {
  port: number;
  host: string;
}

/** A port and a host to listen on; `gateway` listens on 8080 by default. */
export const listenerSchema = (defaultPort: number) =>
  strictObject({ port: port.prefault(defaultPort), host: nonEmptyText.prefault('0.0.0.0') });
