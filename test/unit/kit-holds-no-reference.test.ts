/**
 * The kit holds no reference domain: no code in lib/, lambdas/ or bin/ names the reference app's
 * job types, consumers, payload types or tables (examples/reference, its domain in
 * examples/reference/domain), with no exception: an app's domain comes in through its
 * declaration and its extensions module (lib/local/extensions.ts).
 * Code, not prose: string literals and template text, identifiers, property names; comments may
 * cite the reference as an example. Each finding is reported as file:line.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import ts from 'typescript';

const ROOT = path.join(__dirname, '..', '..');
const SCANNED = ['lib', 'lambdas', 'bin'];

/** The reference app's job types and consumers: found anywhere inside a string or template. */
const NAMES_IN_TEXT = [
  'payment.capture',
  'notification.send',
  'inventory.reserve',
  'payment-consumer',
  'notification-consumer',
  'inventory-consumer',
  'cache-invalidator',
  'outbox-relay',
];

/** Its payload types and their registry: as identifiers, and inside strings. */
const PAYLOAD_NAMES = [
  'PaymentCapturePayload',
  'NotificationSendPayload',
  'InventoryReservePayload',
  'PAYLOADS',
  'JobTypeName',
];

/** Its tables. */
const TABLES = ['orders', 'locks', 'dedup', 'inventory'];
/**
 * Its own tables (not the kit's lease-lock and dedup layouts, TABLE_KEYS.locks/dedup, which any
 * app may use): also as property names.
 */
const OWN_TABLES = new Set(['orders', 'inventory']);

/** The tables' variables in a function's environment (`ORDERS_TABLE`), as keys or in text. */
const TABLE_VARIABLES = TABLES.map((t) => `${t.toUpperCase()}_TABLE`);

/** What one piece of string text names, if anything. */
function namedInText(text: string): string | undefined {
  const name = [...NAMES_IN_TEXT, ...PAYLOAD_NAMES].find((n) => text.includes(n));
  if (name !== undefined) return name;
  for (const table of TABLES) {
    // The table itself, its physical name (`tenang-<stage>-orders`) or its variable (ORDERS_TABLE).
    if (text === table || text.endsWith(`-${table}`) || text.includes(`${table.toUpperCase()}_TABLE`)) {
      return table;
    }
  }
  return undefined;
}

/** A property name node: an object literal's key, a property access, a declared member. */
function isPropertyName(node: ts.Identifier): boolean {
  const parent = node.parent;
  return (
    (ts.isPropertyAccessExpression(parent) && parent.name === node) ||
    ((ts.isPropertyAssignment(parent) ||
      ts.isPropertySignature(parent) ||
      ts.isPropertyDeclaration(parent) ||
      ts.isMethodDeclaration(parent)) &&
      parent.name === node) ||
    ts.isShorthandPropertyAssignment(parent)
  );
}

/** Every reference name in `source`'s code, as `line: what`. */
export function referenceNamesIn(fileName: string, source: string): string[] {
  const file = ts.createSourceFile(fileName, source, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS);
  const found: string[] = [];
  const report = (node: ts.Node, what: string): void => {
    const { line } = file.getLineAndCharacterOfPosition(node.getStart(file));
    found.push(`${line + 1}: ${what}`);
  };
  const visit = (node: ts.Node): void => {
    if (
      ts.isStringLiteral(node) ||
      ts.isNoSubstitutionTemplateLiteral(node) ||
      ts.isTemplateHead(node) ||
      ts.isTemplateMiddle(node) ||
      ts.isTemplateTail(node)
    ) {
      const name = namedInText(node.text);
      if (name !== undefined) report(node, `"${name}" in ${JSON.stringify(node.text)}`);
    } else if (ts.isIdentifier(node)) {
      if (PAYLOAD_NAMES.includes(node.text) || TABLE_VARIABLES.some((v) => node.text.includes(v))) {
        report(node, `identifier ${node.text}`);
      } else if (OWN_TABLES.has(node.text) && isPropertyName(node)) report(node, `property ${node.text}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(file);
  return found;
}

/** The .ts files under `dir` (relative to the root). */
function scannedFiles(dir: string): string[] {
  const files: string[] = [];
  const walk = (rel: string): void => {
    for (const entry of fs.readdirSync(path.join(ROOT, rel), { withFileTypes: true })) {
      const child = `${rel}/${entry.name}`;
      if (entry.isDirectory()) walk(child);
      else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(child);
    }
  };
  walk(dir);
  return files;
}

describe('The kit holds no reference domain', () => {
  it('when lib/, lambdas/ and bin/ are scanned outside the exceptions, no code names a reference job type, consumer, payload type or table', () => {
    // Act
    const findings = SCANNED.flatMap(scannedFiles).flatMap((file) =>
      referenceNamesIn(file, fs.readFileSync(path.join(ROOT, file), 'utf8')).map((f) => `${file}:${f}`),
    );

    // Assess
    expect(findings).toEqual([]);
  });

  it('when the scanner reads code that names the reference, it reports each name with its line; prose and the kit’s own layouts pass', () => {
    // Prepare
    const source = [
      '/** e.g. the reference app’s payment.capture and its orders table. */',
      "const type = 'payment.capture';",
      'const table = `tenang-${stage}-orders`;',
      "const env = { ORDERS_TABLE: 'x', DEDUP_TABLE: 'y' };",
      'const payload: PaymentCapturePayload = f(PAYLOADS);',
      "const store = { inventory: 1 }; use(deps.orders, 'locks');",
      'const layouts = [TABLE_KEYS.locks, TABLE_KEYS.dedup, TABLE_KEYS.idempotency];',
      "const consumer = `${stage}-outbox-relay`; const other = 'invoice.issue';",
    ].join('\n');

    // Act
    const findings = referenceNamesIn('x.ts', source);

    // Assess
    expect(findings).toEqual([
      '2: "payment.capture" in "payment.capture"',
      '3: "orders" in "-orders"',
      '4: identifier ORDERS_TABLE',
      '4: identifier DEDUP_TABLE',
      '5: identifier PaymentCapturePayload',
      '5: identifier PAYLOADS',
      '6: property inventory',
      '6: property orders',
      '6: "locks" in "locks"',
      '8: "outbox-relay" in "-outbox-relay"',
    ]);
  });

  it("when the reference's domain is scanned, the scanner finds its names: the scan cannot pass by reading nothing", () => {
    // Act
    const findings = referenceNamesIn(
      'examples/reference/domain/payloads.ts',
      fs.readFileSync(path.join(ROOT, 'examples/reference/domain/payloads.ts'), 'utf8'),
    );

    // Assess
    expect(findings.some((f) => f.includes('"payment.capture"'))).toBe(true);
    expect(findings.some((f) => f.includes('identifier PaymentCapturePayload'))).toBe(true);
  });
});
