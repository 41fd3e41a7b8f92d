import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { loadPipelineConfig } from '../../../lib/config';
import { LocalEnvError } from '../../../lib/local/errors';
import { loadAppExtensions } from '../../../lib/local/extensions';
import { referencePipeline } from '../../../examples/reference/pipeline';
import { ownAppDeclaration } from '../../fixtures/own-app';

const ROOT = path.join(__dirname, '..', '..', '..');

/** An app directory whose cdk.json names `module` (written as extensions.js) as its extensions. */
function appWith(module: string): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'tenang-extensions-'));
  fs.writeFileSync(
    path.join(dir, 'cdk.json'),
    JSON.stringify({ app: 'x', context: { 'tenang:extensions': 'extensions.js' } }),
  );
  fs.writeFileSync(path.join(dir, 'extensions.js'), module);
  return dir;
}

describe('Module: extensions (the scenario flow)', () => {
  const dirs: string[] = [];
  afterAll(() => {
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('when the reference app is loaded (the checkout and examples/reference), its extensions give the order flow, which only the reference’s declaration holds', () => {
    // Act
    const fromCheckout = loadAppExtensions(ROOT).scenarioFlow;
    const fromExample = loadAppExtensions(path.join(ROOT, 'examples', 'reference')).scenarioFlow;

    // Assess
    expect(fromCheckout?.name).toBe('order flow');
    expect(fromExample).toBe(fromCheckout);
    expect(fromCheckout?.jobTypes(loadPipelineConfig(referencePipeline('dev', 'us-east-1')))).toHaveLength(3);
    expect(fromCheckout?.jobTypes(loadPipelineConfig(ownAppDeclaration('dev', 'us-east-1')))).toEqual([]);
    expect(typeof fromCheckout?.seed).toBe('function');
  });

  it('when an app’s scenario flow lacks what the scenario calls, loading says what is missing', () => {
    // Prepare
    const dir = appWith("module.exports = { scenarioFlow: { name: '', jobTypes: () => [], seed: 1 } };");
    dirs.push(dir);

    // Act & Assess
    expect(() => loadAppExtensions(dir)).toThrow(LocalEnvError);
    expect(() => loadAppExtensions(dir)).toThrow('scenarioFlow needs a name, prepare, seed as a function');
  });

  it('when an app’s scenario flow has a name, jobTypes and prepare, it loads without a seed hook', () => {
    // Prepare
    const dir = appWith(
      "module.exports = { scenarioFlow: { name: 'invoices', jobTypes: () => [], prepare: async () => undefined } };",
    );
    dirs.push(dir);

    // Act
    const flow = loadAppExtensions(dir).scenarioFlow;

    // Assess
    expect(flow?.name).toBe('invoices');
    expect(flow?.seed).toBeUndefined();
  });
});
