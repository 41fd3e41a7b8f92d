/**
 * The preflight's model of a stage from the declaration alone (stageFromConfig) against the
 * model of the synthesized stack (stageFromTemplate): the names, mappings and services the
 * declaration derives must be the ones the stack creates, or a preflight before synth would
 * look up the wrong tables and log groups.
 */
import { stageFromConfig, stageFromTemplate } from '../../lib/audit/preflight';
import { synthPipeline } from './helpers';

describe('Preflight model (P5)', () => {
  it("when the reference stack is synthesized, the declaration's model names its retained tables and log groups and its mappings, and only the app's own functions are missing", () => {
    // Prepare
    const { template, config, stack } = synthPipeline('aws');

    // Act
    const fromTemplate = stageFromTemplate(template.toJSON(), stack.stackName, 'synth');
    const fromConfig = stageFromConfig(config, stack.stackName);

    // Assess
    expect([...fromConfig.retainedTables].sort()).toEqual([...fromTemplate.retainedTables].sort());
    const appFunctions = ['ingress', 'order-reader'].map((s) => `${stack.stackName}-${s}`);
    expect([...fromConfig.retainedLogGroups].sort()).toEqual(
      fromTemplate.retainedLogGroups
        .filter((g) => !appFunctions.some((f) => g === `/aws/lambda/${f}`))
        .sort(),
    );
    expect(fromTemplate.functions.map((f) => f.name).sort()).toEqual(
      [...fromConfig.functions.map((f) => f.name), ...appFunctions].sort(),
    );
    const key = (m: {
      functionName: string;
      kind: string;
      maxConcurrency?: number;
      streamTable?: string;
    }): string => `${m.functionName} ${m.kind} ${m.maxConcurrency ?? '-'} ${m.streamTable ?? '-'}`;
    expect(fromConfig.mappings.map(key).sort()).toEqual(fromTemplate.mappings.map(key).sort());
    // The reference app's HTTP API is the app's own.
    expect(fromTemplate.services.filter((s) => !fromConfig.services.includes(s))).toEqual(['apigatewayv2']);
    expect(fromConfig.services.filter((s) => !fromTemplate.services.includes(s))).toEqual([]);
    expect(fromTemplate.bootstrap?.version).toBe(fromConfig.bootstrap?.version);
  });
});
