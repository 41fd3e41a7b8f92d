/**
 * Properties of lib/local/iam/evaluate.ts against small oracles written from AWS's documentation
 * (https://docs.aws.amazon.com/IAM/latest/UserGuide/… unless said otherwise), not from the
 * evaluator: each oracle below restates one documented rule in the plainest code that can state it
 * (a backtracking wildcard matcher, a table of what an absent key does), and fast-check generates
 * policies and requests, biased so that patterns often almost match, to compare the two.
 * A differential run against an independent evaluator found two defects (a variable before the
 * ARN's fifth colon was substituted; ForAnyValue…IfExists held on an absent key); the properties
 * on variables and on absent keys each fail on the evaluator as it was before those fixes.
 */
import fc from 'fast-check';
import {
  evaluate,
  parsePolicy,
  type ContextValue,
  type Decision,
  type NamedPolicy,
  type PolicyStatement,
} from '../../../lib/local/iam/evaluate';

const ACCOUNT = '123456789012';
const ROLE = 'PaymentConsumerRole';
const ROLE_ARN = `arn:aws:iam::${ACCOUNT}:role/${ROLE}`;
const SESSION_ARN = `arn:aws:sts::${ACCOUNT}:assumed-role/${ROLE}/payment-consumer`;
const PRINCIPAL = {
  type: 'role',
  roleArn: ROLE_ARN,
  sessionName: 'payment-consumer',
  accountId: ACCOUNT,
} as const;
/** Each property stays well under a second; the file under five. */
const RUNS = { numRuns: 400 };

// ---------------------------------------------------------------------------------------------
// The oracles
// ---------------------------------------------------------------------------------------------

/** A pattern as the documentation describes it: literal characters, `*` and `?`. */
type Token =
  | { readonly kind: 'char'; readonly char: string }
  | { readonly kind: 'star' | 'one'; readonly crossesColons: boolean };

/**
 * Tokens of a pattern. `wildcards` false: every character literal. `segments` true (Resource):
 * "You can use wildcard characters (* and ?) within the individual segments of an ARN (the parts
 * separated by colons) … If the * wildcard is the last character of a resource ARN segment, it can
 * expand to match beyond the colon boundaries" (reference_policies_elements_resource.html).
 */
function tokens(pattern: string, options: { wildcards?: boolean; segments?: boolean } = {}): Token[] {
  const { wildcards = true, segments = false } = options;
  return [...pattern].map((char, i): Token => {
    if (!wildcards || (char !== '*' && char !== '?')) return { kind: 'char', char };
    const next = pattern[i + 1];
    const lastOfSegment = next === undefined || next === ':';
    const crossesColons = !segments || (char === '*' && lastOfSegment);
    return { kind: char === '*' ? 'star' : 'one', crossesColons };
  });
}

/** Whether the tokens match the whole text: plain backtracking over both, memoised. */
function matches(pattern: readonly Token[], text: string, ignoreCase = false): boolean {
  const fold = (s: string): string => (ignoreCase ? s.toLowerCase() : s);
  const memo = new Map<number, boolean>();
  const at = (p: number, t: number): boolean => {
    const key = p * (text.length + 1) + t;
    const known = memo.get(key);
    if (known !== undefined) return known;
    let result: boolean;
    const token = pattern[p];
    if (token === undefined) result = t === text.length;
    else if (token.kind === 'char')
      result = t < text.length && fold(text[t] ?? '') === fold(token.char) && at(p + 1, t + 1);
    else {
      const fits = (i: number): boolean => token.crossesColons || text[i] !== ':';
      if (token.kind === 'one') result = t < text.length && fits(t) && at(p + 1, t + 1);
      else {
        // A star takes zero characters, or one more and stays.
        result = at(p + 1, t) || (t < text.length && fits(t) && at(p, t + 1));
      }
    }
    memo.set(key, result);
    return result;
  };
  return at(0, 0);
}

/** reference_policies_elements_action.html: "The prefix and the action name are case insensitive." */
const actionMatches = (pattern: string, action: string): boolean => matches(tokens(pattern), action, true);
/** reference_policies_elements_resource.html: segment-bound wildcards; the match is case-sensitive. */
const resourceMatches = (pattern: string, resource: string): boolean =>
  matches(tokens(pattern, { segments: true }), resource);

// ---------------------------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------------------------

const SERVICES = ['sqs', 'sns', 'kms'];
const NAMES = ['SendMessage', 'ReceiveMessage', 'Publish', 'Decrypt', 'GetQueueUrl', 'Send'];
const action = fc.tuple(fc.constantFrom(...SERVICES), fc.constantFrom(...NAMES)).map(([s, n]) => `${s}:${n}`);
const resourceName = fc.constantFrom(
  'orders',
  'orders-dlq',
  'Orders',
  'alarms',
  'log-group:app:stream',
  'key/ab',
);
const arn = fc
  .record({
    service: fc.constantFrom(...SERVICES),
    region: fc.constantFrom('us-east-1', 'eu-west-1'),
    account: fc.constantFrom(ACCOUNT, '999999999999'),
    name: resourceName,
  })
  .map(({ service, region, account, name }) => `arn:aws:${service}:${region}:${account}:${name}`);
/** Mostly ARNs, sometimes "*" (a request on no particular resource, such as sqs:ListQueues). */
const resource = fc.oneof({ weight: 9, arbitrary: arn }, { weight: 1, arbitrary: fc.constant('*') });

interface Edit {
  readonly at: number; // a fraction of the editable length
  readonly length: number;
  /** star: a run becomes `*`; one: a character becomes `?`; span: a run through the next colon becomes `*`; colon: the next colon becomes `?`; case: letters flip case. */
  readonly kind: 'star' | 'one' | 'span' | 'colon' | 'case';
}
const edits = fc.array(
  fc.record({
    at: fc.double({ min: 0, max: 1, noNaN: true, maxExcluded: true }),
    length: fc.integer({ min: 0, max: 6 }),
    kind: fc.constantFrom<Edit['kind']>('star', 'one', 'span', 'colon', 'case'),
  }),
  { maxLength: 3 },
);

/**
 * A pattern near `text`: runs replaced by `*`, characters by `?`, letters' case flipped, only from
 * `from` on (the documentation allows no wildcard in an ARN's service, nor in an action's prefix).
 */
function nearPattern(text: string, from: number, changes: readonly Edit[]): string {
  let out = text;
  for (const change of changes) {
    if (out.length <= from) break;
    const start = from + Math.floor(change.at * (out.length - from));
    const colon = out.indexOf(':', start);
    if (change.kind === 'colon' || change.kind === 'span') {
      if (colon === -1) continue;
      const end = change.kind === 'colon' ? colon + 1 : Math.min(out.length, colon + 1 + change.length);
      out =
        out.slice(0, change.kind === 'colon' ? colon : start) +
        (change.kind === 'colon' ? '?' : '*') +
        out.slice(end);
      continue;
    }
    const end = Math.min(out.length, start + Math.max(1, change.length));
    const piece = out.slice(start, end);
    let replaced: string;
    if (change.kind === 'star') replaced = '*';
    else if (change.kind === 'one') replaced = '?' + piece.slice(1);
    else
      replaced = [...piece].map((c) => (c === c.toLowerCase() ? c.toUpperCase() : c.toLowerCase())).join('');
    out = out.slice(0, start) + replaced + out.slice(end);
  }
  return out;
}

/** Patterns near the request's action (so that they often almost match it) or near another one. */
const actionPattern = (requested: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant('*') },
    {
      weight: 8,
      arbitrary: fc
        .tuple(fc.oneof(fc.constant(requested), action), edits, fc.boolean())
        .map(([a, e, upperPrefix]) => {
          const colon = a.indexOf(':') + 1;
          const near = nearPattern(a, colon, e);
          const pattern = upperPrefix ? near.slice(0, colon).toUpperCase() + near.slice(colon) : near;
          return pattern.length > colon ? pattern : `${pattern}*`;
        }),
    },
  );
/** Likewise for resources; edits start at the region: "You can't use a wildcard in the service segment". */
const resourcePattern = (requested: string): fc.Arbitrary<string> =>
  fc.oneof(
    { weight: 1, arbitrary: fc.constant('*') },
    {
      weight: 8,
      arbitrary: fc
        .tuple(requested === '*' ? arn : fc.oneof(fc.constant(requested), arn), edits)
        .map(([a, e]) => nearPattern(a, a.split(':', 3).join(':').length + 1, e)),
    },
  );

interface Shape {
  readonly effect: 'Allow' | 'Deny';
  readonly notAction: boolean;
  readonly actions: string[];
  readonly notResource: boolean;
  readonly resources: string[];
}
const shape = (requestAction: string, requestResource: string): fc.Arbitrary<Shape> =>
  fc.record({
    effect: fc.constantFrom<'Allow' | 'Deny'>('Allow', 'Deny'),
    notAction: fc.boolean(),
    actions: fc.array(actionPattern(requestAction), { minLength: 1, maxLength: 2 }),
    notResource: fc.boolean(),
    resources: fc.array(resourcePattern(requestResource), { minLength: 1, maxLength: 2 }),
  });
const toStatement = (s: Shape): PolicyStatement => ({
  Effect: s.effect,
  ...(s.notAction ? { NotAction: s.actions } : { Action: s.actions }),
  ...(s.notResource ? { NotResource: s.resources } : { Resource: s.resources }),
});

const policy = (id: string, statements: PolicyStatement[], version = '2012-10-17'): NamedPolicy =>
  parsePolicy({ Version: version, Statement: statements }, id);

/** One identity-based Allow of everything but a condition, for a role session. */
function allowedUnder(
  condition: Record<string, Record<string, unknown>>,
  context: Record<string, ContextValue | undefined>,
): boolean {
  const statement: PolicyStatement = { Effect: 'Allow', Action: '*', Resource: '*', Condition: condition };
  const decision = evaluate(
    { principal: PRINCIPAL, action: 'sqs:SendMessage', resource: '*', context },
    { identity: [policy('Conditional', [statement])], resourceAccountId: ACCOUNT },
  );
  return decision.decision === 'allow';
}

/** "Condition key names are not case-sensitive": the policy spells the key in any case. */
const keySpelling = (key: string): fc.Arbitrary<string> =>
  fc
    .array(fc.boolean(), { minLength: key.length, maxLength: key.length })
    .map((upper) => [...key].map((c, i) => (upper[i] ? c.toUpperCase() : c.toLowerCase())).join(''));

// ---------------------------------------------------------------------------------------------
// Properties
// ---------------------------------------------------------------------------------------------

describe('properties of evaluate() against oracles of the documented rules', () => {
  it('the decision follows the evaluation logic: an explicit Deny wins, then any Allow, else an implicit deny; NotAction/NotResource are the complements; actions match case-insensitively and resources case-sensitively', () => {
    // reference_policies_evaluation-logic.html: "An explicit deny in any policy overrides any
    // allows"; within one account an Allow in the identity-based OR the resource-based policy
    // suffices; "By default, all requests are implicitly denied". notaction.html / notresource.html:
    // the statement applies to everything except what is listed. elements_principal.html: an
    // account principal "delegates authority to the account", so its Allow grants nothing by itself
    // while its Deny applies to every principal in the account.
    const principal = fc.constantFrom<'*' | 'role' | 'session' | 'account' | 'other'>(
      '*',
      'role',
      'session',
      'account',
      'other',
    );
    const principalElement = {
      '*': '*',
      role: { AWS: ROLE_ARN },
      session: { AWS: SESSION_ARN },
      account: { AWS: ACCOUNT },
      other: { AWS: `arn:aws:iam::${ACCOUNT}:role/Other` },
    } as const;
    fc.assert(
      fc.property(
        fc.tuple(action, resource).chain(([a, r]) =>
          fc.tuple(
            fc.constant(a),
            fc.constant(r),
            fc.array(shape(a, r), { maxLength: 4 }),
            fc.option(fc.array(fc.tuple(shape(a, r), principal), { minLength: 1, maxLength: 3 }), {
              nil: undefined,
            }),
          ),
        ),
        ([requestAction, requestResource, identity, resourcePolicy]) => {
          const applies = (s: Shape): boolean =>
            s.actions.some((p) => actionMatches(p, requestAction)) !== s.notAction &&
            s.resources.some((p) => resourceMatches(p, requestResource)) !== s.notResource;
          const identityHits = identity.filter(applies);
          const resourceHits = (resourcePolicy ?? []).filter(([s]) => applies(s));
          const denied =
            identityHits.some((s) => s.effect === 'Deny') ||
            resourceHits.some(([s, who]) => s.effect === 'Deny' && who !== 'other');
          const allowed =
            identityHits.some((s) => s.effect === 'Allow') ||
            resourceHits.some(
              ([s, who]) => s.effect === 'Allow' && (who === '*' || who === 'role' || who === 'session'),
            );
          const expected: Decision['decision'] = denied
            ? 'explicit-deny'
            : allowed
              ? 'allow'
              : 'implicit-deny';

          const decision = evaluate(
            { principal: PRINCIPAL, action: requestAction, resource: requestResource },
            {
              identity: identity.length > 0 ? [policy('Identity', identity.map(toStatement))] : [],
              ...(resourcePolicy
                ? {
                    resource: policy(
                      'Resource',
                      resourcePolicy.map(([s, who]) => ({
                        ...toStatement(s),
                        Principal: principalElement[who],
                      })),
                    ),
                  }
                : {}),
              resourceAccountId: ACCOUNT,
            },
          );
          expect(decision.decision).toBe(expected);
        },
      ),
      { numRuns: 600 },
    );
  });

  it('a policy variable is substituted after the fifth colon of a Resource ARN and never before it ("You can\'t use a variable to replace parts of the ARN before the fifth colon, such as the service or account")', () => {
    // reference_policies_variables.html. Also: without Version 2012-10-17 "variables like
    // ${aws:username} are treated as literal strings"; "the resource that includes a policy variable
    // with no value will not match any resource". A field written as a variable stays literal text
    // where it is not substituted, and no request ARN contains "${", so it cannot match.
    const field = fc.record({
      asVariable: fc.boolean(),
      // The tag's value: the field's own text, another one, or no tag at all.
      tag: fc.constantFrom<'same' | 'other' | 'none'>('same', 'same', 'other', 'none'),
    });
    fc.assert(
      fc.property(
        arn,
        fc.array(field, { minLength: 6, maxLength: 6 }),
        fc.boolean(),
        fc.boolean(),
        (requestResource, fields, tailStar, modern) => {
          // arn : partition : service : region : account : resource — six fields, five colons.
          const parts = requestResource.split(':');
          const texts = [...parts.slice(0, 5), parts.slice(5).join(':')];
          const context: Record<string, string> = {};
          let written = '';
          const oracle: Token[] = [];
          let anyUnresolved = false;
          texts.forEach((text, i) => {
            const spec = fields[i];
            if (i > 0) {
              written += ':';
              oracle.push({ kind: 'char', char: ':' });
            }
            if (spec === undefined || !spec.asVariable) {
              written += text;
              oracle.push(...tokens(text, { wildcards: false }));
              return;
            }
            const variable = `\${aws:PrincipalTag/f${i}}`;
            written += variable;
            if (spec.tag !== 'none')
              context[`aws:PrincipalTag/f${i}`] = spec.tag === 'same' ? text : `${text}x`;
            const substituted = modern && i === 5;
            if (!substituted) oracle.push(...tokens(variable, { wildcards: false }));
            else if (spec.tag === 'none') anyUnresolved = true;
            else oracle.push(...tokens(context[`aws:PrincipalTag/f${i}`] ?? '', { wildcards: false }));
          });
          if (tailStar) {
            written += '*';
            oracle.push(...tokens('*', { segments: true }));
          }
          const expected = !anyUnresolved && matches(oracle, requestResource);
          const decision = evaluate(
            { principal: PRINCIPAL, action: 'sqs:SendMessage', resource: requestResource, context },
            {
              identity: [
                policy(
                  'Variables',
                  [{ Effect: 'Allow', Action: 'sqs:SendMessage', Resource: written }],
                  modern ? '2012-10-17' : '2008-10-17',
                ),
              ],
              resourceAccountId: ACCOUNT,
            },
          );
          expect(decision.decision).toBe(expected ? 'allow' : 'implicit-deny');
        },
      ),
      RUNS,
    );
  });

  it('on an absent key: ForAnyValue is false and ForAllValues true with or without IfExists; a plain operator is true with IfExists, otherwise true only if negated', () => {
    // reference_policies_condition-single-vs-multi-valued-context-keys.html: ForAnyValue "For no
    // matching context key or a null dataset, the condition returns false"; ForAllValues "also
    // returns true if there are no context keys in the request". condition_operators.html: "If the
    // key that you specify in a policy condition is not present in the request context, the values
    // do not match and the condition is false. If the policy condition requires that the key is not
    // matched, such as StringNotLike or ArnNotLike, and the right key is not present, the condition
    // is true. This logic applies to all condition operators except ...IfExists and Null check";
    // IfExists: "If the key is not present, evaluate the condition element as true."
    const operators: readonly [string, string][] = [
      ['StringEquals', 'x'],
      ['StringNotEquals', 'x'],
      ['StringEqualsIgnoreCase', 'x'],
      ['StringNotEqualsIgnoreCase', 'x'],
      ['StringLike', 'x*'],
      ['StringNotLike', 'x*'],
      ['NumericEquals', '10'],
      ['NumericNotEquals', '10'],
      ['NumericLessThan', '10'],
      ['NumericGreaterThanEquals', '10'],
      ['DateEquals', '2020-01-01T00:00:00Z'],
      ['DateNotEquals', '2020-01-01T00:00:00Z'],
      ['DateLessThan', '2020-01-01T00:00:00Z'],
      ['Bool', 'true'],
      ['BinaryEquals', 'QmluYXJ5'],
      ['IpAddress', '10.0.0.0/8'],
      ['NotIpAddress', '10.0.0.0/8'],
      ['ArnEquals', 'arn:aws:sns:*:*:*'],
      ['ArnNotEquals', 'arn:aws:sns:*:*:*'],
      ['ArnLike', 'arn:aws:sns:*:*:*'],
      ['ArnNotLike', 'arn:aws:sns:*:*:*'],
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...operators),
        fc.constantFrom<'' | 'ForAnyValue:' | 'ForAllValues:'>('', 'ForAnyValue:', 'ForAllValues:'),
        fc.boolean(),
        keySpelling('aws:TagKeys'),
        // Absent: not in the context, or given as undefined; for a set operator also an empty set.
        fc.constantFrom<'missing' | 'undefined' | 'empty'>('missing', 'undefined', 'empty'),
        ([base, value], set, ifExists, key, absence) => {
          fc.pre(absence !== 'empty' || set !== '');
          const negated = /Not(Equals|Like|IpAddress)/.test(base);
          const expected =
            set === 'ForAnyValue:' ? false : set === 'ForAllValues:' ? true : ifExists || negated;
          const context: Record<string, ContextValue | undefined> =
            absence === 'missing' ? {} : { 'aws:TagKeys': absence === 'empty' ? [] : undefined };
          const operator = `${set}${base}${ifExists ? 'IfExists' : ''}`;
          expect(allowedUnder({ [operator]: { [key]: value } }, context)).toBe(expected);
        },
      ),
      RUNS,
    );
  });

  it('Null is true for an absent key and false for a present one, and "false" asks the opposite', () => {
    // condition_operators.html: "Use a Null condition operator to check if a condition key is absent
    // at the time of authorization. In the policy statement, use either true (the key doesn't exist
    // — it is null) or false (the key exists and its value is not null)."
    fc.assert(
      fc.property(
        fc.option(
          fc.oneof(
            fc.constantFrom('a', 'false', 'true'),
            fc.array(fc.constantFrom('a', 'b'), { minLength: 1 }),
          ),
          {
            nil: undefined,
          },
        ),
        fc.constantFrom<string | boolean>('true', 'false', true, false, 'TRUE'),
        keySpelling('aws:PrincipalTag/team'),
        (present, wanted, key) => {
          const absent = present === undefined;
          const expected = (String(wanted).toLowerCase() === 'true') === absent;
          expect(allowedUnder({ Null: { [key]: wanted } }, { 'aws:PrincipalTag/team': present })).toBe(
            expected,
          );
        },
      ),
      RUNS,
    );
  });

  it('on a present key, string and numeric operators compare as documented, sets per ForAnyValue/ForAllValues, and IfExists changes nothing', () => {
    // condition_operators.html: StringEquals "Exact matching, case sensitive", …IgnoreCase "ignore
    // case", StringLike "Case-sensitive matching. The values can include multi-character match
    // wildcards (*) and single-character match wildcards (?) anywhere in the string"; Numeric* compare
    // numbers. condition-logic-multiple-context-keys-or-values.html: several values of one key are
    // ORed, and for a negated operator the request value must match none of them.
    // single-vs-multi-valued-context-keys.html: ForAllValues "returns true if every key value in the
    // request matches at least one value in the policy", ForAnyValue "if any one of the key values in
    // the request matches any one of the condition values".
    // No empty strings: whether "" is a "null data set" for ForAllValues is not documented clearly.
    const word = fc.stringMatching(/^[abAB]{1,3}$/);
    const likeWord = fc.stringMatching(/^[abAB*?]{1,3}$/);
    type Family = 'eq' | 'eqIgnoreCase' | 'like' | 'num';
    const families: Record<
      string,
      { family: Family; negated: boolean; compare?: (l: number, r: number) => boolean }
    > = {
      StringEquals: { family: 'eq', negated: false },
      StringNotEquals: { family: 'eq', negated: true },
      StringEqualsIgnoreCase: { family: 'eqIgnoreCase', negated: false },
      StringNotEqualsIgnoreCase: { family: 'eqIgnoreCase', negated: true },
      StringLike: { family: 'like', negated: false },
      StringNotLike: { family: 'like', negated: true },
      NumericEquals: { family: 'num', negated: false, compare: (l, r) => l === r },
      NumericNotEquals: { family: 'num', negated: true, compare: (l, r) => l === r },
      NumericLessThan: { family: 'num', negated: false, compare: (l, r) => l < r },
      NumericLessThanEquals: { family: 'num', negated: false, compare: (l, r) => l <= r },
      NumericGreaterThan: { family: 'num', negated: false, compare: (l, r) => l > r },
      NumericGreaterThanEquals: { family: 'num', negated: false, compare: (l, r) => l >= r },
    };
    const number = fc.integer({ min: -3, max: 3 }).map(String);
    const caseArb = fc
      .record({
        base: fc.constantFrom(...Object.keys(families)),
        set: fc.constantFrom<'' | 'ForAnyValue:' | 'ForAllValues:'>('', 'ForAnyValue:', 'ForAllValues:'),
        ifExists: fc.boolean(),
      })
      .chain(({ base, set, ifExists }) => {
        const spec = families[base]!;
        const value = spec.family === 'num' ? number : word;
        const policyValue = spec.family === 'num' ? number : spec.family === 'like' ? likeWord : word;
        return fc.record({
          base: fc.constant(base),
          set: fc.constant(set),
          ifExists: fc.constant(ifExists),
          policyValues: fc.array(policyValue, { minLength: 1, maxLength: 3 }),
          // A plain operator gets one value (a single-valued key), a set operator one to three.
          requestValues: fc.array(value, { minLength: 1, maxLength: set === '' ? 1 : 3 }),
        });
      });
    fc.assert(
      fc.property(caseArb, ({ base, set, ifExists, policyValues, requestValues }) => {
        const spec = families[base]!;
        const one = (request: string, policyValue: string): boolean => {
          switch (spec.family) {
            case 'eq':
              return request === policyValue;
            case 'eqIgnoreCase':
              return request.toLowerCase() === policyValue.toLowerCase();
            case 'like':
              return matches(tokens(policyValue), request);
            case 'num':
              return spec.compare!(Number(request), Number(policyValue));
          }
        };
        const holds = (request: string): boolean =>
          policyValues.some((p) => one(request, p)) !== spec.negated;
        const expected = set === 'ForAllValues:' ? requestValues.every(holds) : requestValues.some(holds);
        const operator = `${set}${base}${ifExists ? 'IfExists' : ''}`;
        const contextValue = set === '' ? requestValues[0] : requestValues;
        expect(
          allowedUnder(
            { [operator]: { 'aws:PrincipalTag/team': policyValues } },
            { 'aws:PrincipalTag/team': contextValue },
          ),
        ).toBe(expected);
      }),
      RUNS,
    );
  });

  it('ARN operators check "each of the six colon-delimited components of the ARN … separately", case-sensitively', () => {
    // condition_operators.html, ArnEquals/ArnLike: "Case-sensitive matching of the ARN. Each of the
    // six colon-delimited components of the ARN is checked separately and each can include
    // multi-character match wildcards (*) or single-character match wildcards (?)"; "The ArnEquals
    // and ArnLike condition operators behave identically"; the Not forms negate (and NOR values).
    const components = (value: string): string[] => {
      const parts = value.split(':');
      return [...parts.slice(0, 5), parts.slice(5).join(':')];
    };
    // Each component kept, edited within itself, made "*", or (the sixth) cut to its last part, so
    // that a wildcard in an earlier component could only match by swallowing colons.
    type Change = Edit | 'star' | 'tail' | undefined;
    const componentPattern = (text: string, i: number, change: Change): string => {
      if (i < 2 || change === undefined) return text;
      if (change === 'star') return '*';
      if (change === 'tail') return i === 5 ? (text.split(':').at(-1) ?? text) : text;
      return nearPattern(text, 0, [
        { ...change, kind: change.kind === 'span' || change.kind === 'colon' ? 'star' : change.kind },
      ]);
    };
    const change: fc.Arbitrary<Change> = fc.oneof(
      fc.constant(undefined),
      fc.constant<'star'>('star'),
      fc.constant<'tail'>('tail'),
      edits.map((e) => e[0]),
    );
    const arnPattern = (requested: string): fc.Arbitrary<string> =>
      fc
        .tuple(fc.oneof(fc.constant(requested), arn), fc.array(change, { minLength: 6, maxLength: 6 }))
        .map(([a, changes]) =>
          components(a)
            .map((part, i) => componentPattern(part, i, changes[i]))
            .join(':'),
        );
    fc.assert(
      fc.property(
        fc.constantFrom('ArnEquals', 'ArnLike', 'ArnNotEquals', 'ArnNotLike'),
        fc.boolean(),
        arn.chain((a) => fc.tuple(fc.constant(a), fc.array(arnPattern(a), { minLength: 1, maxLength: 2 }))),
        (base, ifExists, [sourceArn, patterns]) => {
          const value = components(sourceArn);
          const one = (pattern: string): boolean =>
            components(pattern).every((part, i) =>
              matches(tokens(part, { segments: i < 5 }), value[i] ?? ''),
            );
          const expected = patterns.some(one) !== base.includes('Not');
          const operator = `${base}${ifExists ? 'IfExists' : ''}`;
          expect(
            allowedUnder({ [operator]: { 'aws:SourceArn': patterns } }, { 'aws:SourceArn': sourceArn }),
          ).toBe(expected);
        },
      ),
      RUNS,
    );
  });

  it('conditions are ANDed across operators and across the keys of one operator', () => {
    // condition-logic-multiple-context-keys-or-values.html: "If your policy has multiple condition
    // operators or multiple context keys attached to a single condition operator, the conditions are
    // evaluated using a logical AND."
    const KEYS = ['aws:PrincipalTag/a', 'aws:PrincipalTag/b', 'aws:PrincipalTag/c'];
    const test = fc.oneof(
      fc.record({ operator: fc.constant('Null' as const), value: fc.constantFrom('true', 'false') }),
      fc.record({ operator: fc.constant('StringEquals' as const), value: fc.constantFrom('x', 'y') }),
    );
    fc.assert(
      fc.property(
        fc.array(fc.option(test, { nil: undefined }), { minLength: 3, maxLength: 3 }),
        fc.array(fc.option(fc.constantFrom('x', 'y', 'true'), { nil: undefined }), {
          minLength: 3,
          maxLength: 3,
        }),
        (tests, values) => {
          fc.pre(tests.some((t) => t !== undefined));
          const condition: Record<string, Record<string, string>> = {};
          let expected = true;
          tests.forEach((t, i) => {
            const key = KEYS[i] ?? '';
            if (t === undefined) return;
            condition[t.operator] = { ...condition[t.operator], [key]: t.value };
            const present = values[i];
            expected &&=
              t.operator === 'Null' ? (t.value === 'true') === (present === undefined) : present === t.value;
          });
          const context = Object.fromEntries(KEYS.map((key, i) => [key, values[i]]));
          expect(allowedUnder(condition, context)).toBe(expected);
        },
      ),
      RUNS,
    );
  });

  it('the oracle matcher itself: "*" crosses a colon only as the last character of a resource segment, "?" never does', () => {
    // The oracle is code too: pin it to the page's own examples so a wrong oracle cannot pass.
    expect(resourceMatches('arn:aws:s3:::bucket/*', 'arn:aws:s3:::bucket/a:b')).toBe(true);
    expect(resourceMatches('arn:aws:logs:*', 'arn:aws:logs:us-east-1:1:log-group:x')).toBe(true);
    expect(resourceMatches('arn:aws:s3:::bucket/a*b', 'arn:aws:s3:::bucket/a:x:b')).toBe(false);
    expect(resourceMatches('arn:aws:sqs:us-east-1:1:order?', 'arn:aws:sqs:us-east-1:1:orders')).toBe(true);
    expect(resourceMatches('arn:aws:sqs:us-east-1:1:order?', 'arn:aws:sqs:us-east-1:1:order:')).toBe(false);
    expect(resourceMatches('arn:aws:iam::1:user/Bob', 'arn:aws:iam::1:user/bob')).toBe(false);
    expect(actionMatches('IAM:listaccesskeys', 'iam:ListAccessKeys')).toBe(true);
    expect(actionMatches('iam:*AccessKey*', 'iam:GetUser')).toBe(false);
  });
});
