import { describe, expect, it } from 'vitest';
import { snakeCase } from '../../../src/config/snake-case.js';

describe('snakeCase', () => {
  it.each([
    ['High Value Users', 'high_value_users'],
    ['Churn-Risk (30d)', 'churn_risk_30d'],
    ['powerUsers', 'power_users'],
    ['HTTPServer Users', 'http_server_users'],
    ['high_value_users', 'high_value_users'],
    ['  Trailing  spaces  ', 'trailing_spaces'],
    ['user2Name', 'user2_name'],
    ['ABC', 'abc'],
    ['Café Clients', 'café_clients'],
    ['!!!', ''],
  ])('%j → %j', (name, key) => {
    expect(snakeCase(name)).toBe(key);
  });
});
