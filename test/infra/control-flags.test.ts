import type { Template } from 'aws-cdk-lib/assertions';
import { degradeFlagName, pauseFlagName, type PipelineConfig } from '../../lib/config';
import { ControlFlags, type ControlFlagsProps, type ControlledConsumer } from '../../lib/infra/control-flags';
import { lambdaEntry, type PipelineStack } from '../../lib/infra/pipeline-stack';
import {
  actionsOf,
  getAtt,
  logicalId,
  onlyResource,
  propertiesOf,
  propsErrorOf,
  resources,
  resourcesOf,
  roleIdOf,
  statementsOfRole,
  synthPipeline,
  testStack,
  toText,
} from './helpers';

/** Every consumer the reference pipeline declares: job type consumers and stream consumers. */
function consumersOf(config: PipelineConfig): string[] {
  return [...config.jobTypes.map((j) => j.consumer), ...config.streamConsumers.map((s) => s.consumer)];
}

/** Consumer → logical id of its event source mapping, read from the template alone (via the function name). */
function mappingIdsByConsumer(template: Template, stage: string): Record<string, string> {
  const functionNames = new Map(
    resources(template, 'AWS::Lambda::Function').map(([id, fn]) => [id, String(fn.Properties.FunctionName)]),
  );
  return Object.fromEntries(
    resources(template, 'AWS::Lambda::EventSourceMapping').map(([id, mapping]) => {
      const fnId = (mapping.Properties.FunctionName as { Ref: string }).Ref;
      const functionName = functionNames.get(fnId) ?? '';
      return [functionName.replace(`tenang-${stage}-`, ''), id];
    }),
  );
}

describe('Class: ControlFlags', () => {
  // The full stack: the flags control the mappings it creates.
  let stack: PipelineStack;
  let template: Template;
  let config: PipelineConfig;
  beforeAll(() => {
    ({ stack, template, config } = synthPipeline());
  });
  const reconcilerStatements = (): Record<string, unknown>[] =>
    statementsOfRole(template, roleIdOf(stack.controlFlags.reconciler.function));

  describe('Flags', () => {
    it('when the pipeline is built, it creates a pause flag per consumer at /tenang/<stage>/flags/pause/<consumer>, not paused', () => {
      // Prepare
      const consumers = consumersOf(config);

      // Act
      const flags = consumers.map(
        (c) =>
          onlyResource(template, 'AWS::SSM::Parameter', {
            Properties: { Name: `/tenang/dev/flags/pause/${c}` },
          })[1].Properties,
      );

      // Assess
      expect(consumers).toHaveLength(5);
      for (const flag of flags) {
        expect(flag).toMatchObject({ Type: 'String', Value: '{"paused":false}' });
        expect(JSON.parse(String(flag.Value))).toEqual({ paused: false });
      }
      expect([...stack.controlFlags.pauseFlags.keys()].sort()).toEqual([...consumers].sort());
    });

    it('when the pipeline is built, it creates the stage degrade flag, not degraded', () => {
      // Act
      const flag = propertiesOf(template, stack.controlFlags.degradeFlag);

      // Assess
      expect(flag).toMatchObject({
        Name: '/tenang/dev/flags/degrade',
        Type: 'String',
        Value: '{"degraded":false}',
      });
      expect(flag.Name).toBe(degradeFlagName('dev'));
    });
  });

  describe('Reconciler', () => {
    it('when the pipeline is built, the reconciler knows the stage and the mapping id of every consumer', () => {
      // Prepare
      const expected = Object.fromEntries(
        Object.entries(mappingIdsByConsumer(template, 'dev')).map(([consumer, id]) => [
          consumer,
          `\${${id}}`,
        ]),
      );

      // Act
      const env = propertiesOf(template, stack.controlFlags.reconciler.function).Environment as {
        Variables: Record<string, unknown>;
      };

      // Assess
      expect(env.Variables.TENANG_STAGE).toBe('dev');
      const mappings: unknown = JSON.parse(toText(env.Variables.TENANG_MAPPINGS));
      expect(mappings).toEqual(expected);
      expect(Object.keys(expected).sort()).toEqual(consumersOf(config).sort());
    });

    it('when the pipeline is built, the reconciler may get and update only the event source mappings, by ARN', () => {
      // Prepare
      const mappingIds = Object.values(mappingIdsByConsumer(template, 'dev')).sort();

      // Act
      const lambdaStatements = reconcilerStatements().filter((s) =>
        actionsOf(s).some((a) => a.startsWith('lambda:')),
      );

      // Assess
      expect(lambdaStatements).toHaveLength(1);
      const [statement] = lambdaStatements;
      expect(statement).toMatchObject({
        Effect: 'Allow',
        Action: ['lambda:GetEventSourceMapping', 'lambda:UpdateEventSourceMapping'],
      });
      const arns = resourcesOf(statement ?? {}).map(toText);
      expect(arns).not.toContain('*');
      const targeted = arns.map((arn) => {
        const match =
          /^arn:\$\{AWS::Partition\}:lambda:eu-west-1:\$\{AWS::AccountId\}:event-source-mapping:\$\{(\w+)\}$/.exec(
            arn,
          );
        return match?.[1] ?? `not an event-source-mapping ARN: ${arn}`;
      });
      expect(targeted.sort()).toEqual(mappingIds);
    });

    it('when the pipeline is built, the reconciler may read only the pause flags', () => {
      // Prepare
      const pauseFlagIds = [...stack.controlFlags.pauseFlags.values()].map((p) => logicalId(p)).sort();

      // Act
      const ssmStatements = reconcilerStatements().filter((s) =>
        actionsOf(s).some((a) => a.startsWith('ssm:')),
      );

      // Assess
      const actions = [...new Set(ssmStatements.flatMap(actionsOf))];
      expect(actions.every((a) => /^ssm:(Get|Describe)/.test(a))).toBe(true);
      const parameters = ssmStatements.flatMap(resourcesOf).map((r) => {
        const match =
          /^arn:\$\{AWS::Partition\}:ssm:eu-west-1:\$\{AWS::AccountId\}:parameter\$\{(\w+)\}$/.exec(
            toText(r),
          );
        return match?.[1] ?? `not a flag parameter ARN: ${toText(r)}`;
      });
      expect(parameters.sort()).toEqual(pauseFlagIds);
    });

    it('when the pipeline is built, no statement of the reconciler grants "*" except X-Ray tracing', () => {
      // Act
      const wildcard = reconcilerStatements().filter((s) => resourcesOf(s).includes('*'));

      // Assess
      expect(wildcard.flatMap(actionsOf).sort()).toEqual([
        'xray:PutTelemetryRecords',
        'xray:PutTraceSegments',
      ]);
    });
  });

  describe('Rules', () => {
    it('when a pause flag of the stage changes, an EventBridge rule invokes the reconciler', () => {
      // Act
      const [id, rule] = onlyResource(template, 'AWS::Events::Rule', {
        Properties: { EventPattern: { source: ['aws.ssm'] } },
      });

      // Assess
      expect(rule.Properties.EventPattern).toEqual({
        source: ['aws.ssm'],
        'detail-type': ['Parameter Store Change'],
        detail: { name: [{ prefix: '/tenang/dev/flags/pause/' }] },
      });
      expect(rule.Properties.Targets).toEqual([
        expect.objectContaining({ Arn: getAtt(stack.controlFlags.reconciler.function, 'Arn') }),
      ]);
      onlyResource(template, 'AWS::Lambda::Permission', {
        Properties: { Principal: 'events.amazonaws.com', SourceArn: { 'Fn::GetAtt': [id, 'Arn'] } },
      });
    });

    it('when a minute passes, a scheduled rule invokes the reconciler', () => {
      // Act
      const [id, rule] = onlyResource(template, 'AWS::Events::Rule', {
        Properties: { ScheduleExpression: 'rate(1 minute)' },
      });

      // Assess
      expect(rule.Properties.State).toBe('ENABLED');
      expect(rule.Properties.Targets).toEqual([
        expect.objectContaining({ Arn: getAtt(stack.controlFlags.reconciler.function, 'Arn') }),
      ]);
      onlyResource(template, 'AWS::Lambda::Permission', {
        Properties: { Principal: 'events.amazonaws.com', SourceArn: { 'Fn::GetAtt': [id, 'Arn'] } },
      });
    });
  });

  describe('Validation', () => {
    const consumer = (name: string, flagName = pauseFlagName('dev', name)): ControlledConsumer => ({
      consumer: name,
      flagName,
      eventSourceMappingId: '6e1f6e9c-0000-4000-8000-000000000000',
      eventSourceMappingArn: `arn:aws:lambda:eu-west-1:111111111111:event-source-mapping:${name}`,
    });
    const build = (consumers: readonly ControlledConsumer[]): ControlFlags => {
      const props: ControlFlagsProps = {
        stageName: 'dev',
        degradeFlagName: degradeFlagName('dev'),
        consumers,
        reconcilerEntry: lambdaEntry('flag-reconciler'),
      };
      return new ControlFlags(testStack(), 'ControlFlags', props);
    };

    it('when no consumer is given, it fails: at least one is needed', () => {
      // Act
      const error = propsErrorOf(() => build([]));

      // Assess
      expect(error.message).toMatch(/^Invalid props for ControlFlags/);
      expect(error.problems).toEqual(['at least one consumer is needed']);
    });

    it('when a consumer is given twice, it fails: names must be unique', () => {
      // Act
      const error = propsErrorOf(() => build([consumer('payment-consumer'), consumer('payment-consumer')]));

      // Assess
      expect(error.problems).toEqual(['consumer names must be unique']);
    });

    it("when a pause flag lies outside the stage's prefix, it fails naming the prefix", () => {
      // Act
      const error = propsErrorOf(() =>
        build([consumer('payment-consumer', pauseFlagName('prod', 'payment-consumer'))]),
      );

      // Assess
      expect(error.problems).toEqual(['pause flags must live under /tenang/dev/flags/pause/']);
    });

    it('when several rules are broken, it lists every problem in one ConstructPropsError', () => {
      // Act
      const error = propsErrorOf(() =>
        build([consumer('payment-consumer', '/elsewhere/payment-consumer'), consumer('payment-consumer')]),
      );

      // Assess
      expect(error.problems).toHaveLength(2);
    });
  });
});
