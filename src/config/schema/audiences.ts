// `audiences` (docs/configuration.md#audiences): each audience's name, sources, destinations
// and rule (its grammar: audience-rule.ts).

import { checkList, checkText } from './basic-checks.js';
import { AUDIENCE_RULE_REF, checkAudienceRule } from './audience-rule.js';
import type { AudienceRule } from './audience-rule.js';
import { field, idList, nonEmptyText, strictObject } from './zod-fields.js';

export interface AudienceConfig {
  name: string;
  sources: string[];
  destinations: string[];
  rule: AudienceRule;
}

export const audienceSchema = strictObject({
  name: nonEmptyText,
  sources: field(checkList(checkText, { min: 1 })),
  destinations: idList,
  rule: field((value) => checkAudienceRule(value), AUDIENCE_RULE_REF),
});
