// `operations` (docs/operations.md#operational-events): where operational events are POSTed
// besides the `operations` topic.

import { checkStandardSecret } from './signing.js';
import { checkWebhookUrl } from './webhooks.js';
import { field, list, strictObject } from './zod-fields.js';

/** `operations` (docs/operations.md#operational-events): where operational events are POSTed besides the `operations` topic. */
export interface OperationsConfig {
  webhooks: { url: string; secret: string }[];
}

/** An entry of `operations.webhooks`: a URL and its Standard Webhooks secret (`whsec_…`). */
const operationsWebhookSchema = strictObject({
  url: field(checkWebhookUrl),
  secret: field(checkStandardSecret),
});

/** `operations`; its default is applied by the root schema. */
export const operationsSchema = strictObject({
  webhooks: list(operationsWebhookSchema).prefault([]),
});
