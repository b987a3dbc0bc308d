// `npm run schema`: (re)writes config/switchyard.schema.json from the zod schema in
// src/config/schema.ts. Run it after adding or changing a config key, and commit the
// result; test/unit/config/json-schema.test.ts fails while the file is stale.
import { writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { CONFIG_JSON_SCHEMA_PATH, configJsonSchemaText } from '../src/config/json-schema.js';

const file = resolve(import.meta.dirname, '..', CONFIG_JSON_SCHEMA_PATH);
writeFileSync(file, configJsonSchemaText());
console.log(`wrote ${CONFIG_JSON_SCHEMA_PATH}`);
