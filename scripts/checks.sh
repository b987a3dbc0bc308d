#!/bin/sh
# `npm test`'s checks before the tests: the type check and the lint at once. Each is one
# Node process on one core (tsc about 30 s of CPU, type-aware eslint about 70 s); side by
# side on a 2-core machine they take the longer one's time instead of the sum. The output
# of each is its own (both print only what is wrong); the script fails when either fails.
npm run --silent typecheck &
typecheck=$!
npm run --silent lint
lint=$?
wait "$typecheck"
typecheck=$?
[ "$typecheck" -eq 0 ] || echo "npm test: the type check failed (npm run typecheck); see its errors above" >&2
[ "$lint" -eq 0 ] || echo "npm test: the lint failed (npm run lint); see its errors above" >&2
[ "$typecheck" -eq 0 ] && [ "$lint" -eq 0 ]
