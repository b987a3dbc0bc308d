// Router-side shaping of a destination (docs/webhooks.md#shaping): filter, sample,
// dropProperties / allowProperties, transform. Kept together: the keys go into
// destination settings (destinations.ts) as one spread.

import { compileExpression, propertyPathProblem } from '../../shaping/index.js';
import { checkFraction, checkList, checkText } from './basic-checks.js';
import { fail, ok, withInput } from './check.js';
import type { Checked } from './check.js';
import { field } from './zod-fields.js';

function checkExpression(value: unknown): Checked<string> {
  const text = checkText(value);
  if (!text.ok) return text;
  const compiled = compileExpression(text.value);
  if (!compiled.ok) return fail(`is not a JSONata expression that compiles: ${compiled.error}; fix the expression (see docs/webhooks.md#shaping)`);
  return ok(text.value);
}
checkExpression.input = { type: 'string', minLength: 1, description: 'a JSONata expression over the webhook body (docs/webhooks.md#shaping)' };

function checkPropertyPath(list: 'dropProperties' | 'allowProperties') {
  return withInput({ type: 'string', minLength: 1 }, (value: unknown): Checked<string> => {
    const text = checkText(value);
    if (!text.ok) return text;
    const problem = propertyPathProblem(list, text.value);
    return problem === undefined ? ok(text.value) : fail(problem);
  });
}

export const shapingKeys = {
  filter: field(checkExpression).optional(),
  sample: field(checkFraction).optional(),
  dropProperties: field(checkList(checkPropertyPath('dropProperties'), { min: 1 })).optional(),
  allowProperties: field(checkList(checkPropertyPath('allowProperties'), { min: 1 })).optional(),
  transform: field(checkExpression).optional(),
};

/** In JSON Schema: not both lists (beside the settings' other `not`, so in an `allOf`). */
export const SHAPING_INPUT_RULES = [{ not: { required: ['dropProperties', 'allowProperties'], properties: { dropProperties: true, allowProperties: true } } }];
