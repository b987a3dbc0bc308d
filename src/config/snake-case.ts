/**
 * The trait key an audience writes into identify calls, e.g.
 * `High Value Users` → `high_value_users`, `powerUsers` → `power_users`,
 * `HTTPServer Users` → `http_server_users`, `Churn-Risk (30d)` → `churn_risk_30d`.
 * Receivers match on this key, so it must stay stable: changing this function renames
 * every audience trait downstream.
 */
export function snakeCase(name: string): string {
  return (
    name
      // camelCase boundary: "powerUsers" → "power Users", "user2Name" → "user2 Name".
      .replace(/([\p{Ll}\p{N}])(\p{Lu})/gu, '$1 $2')
      // Acronym followed by a word: "HTTPServer" → "HTTP Server".
      .replace(/(\p{Lu})(\p{Lu}\p{Ll})/gu, '$1 $2')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}]+/gu, '_')
      .replace(/^_+|_+$/g, '')
  );
}
