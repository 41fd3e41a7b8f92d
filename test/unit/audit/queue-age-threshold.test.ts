/**
 * O3-QueueAgeThreshold: with the pipeline config's latency objectives, an
 * ApproximateAgeOfOldestMessage alarm on a job type's queue whose Threshold is above the job
 * type's latencyObjectiveSeconds is a finding; without a config the rule does not apply.
 */
import { loadPipelineConfig, type PipelineConfig } from '../../../lib/config';
import type { ChecklistItem } from '../../../lib/audit/checklist';
import { auditTemplate, auditTemplates } from '../../../lib/audit/template-audit';
import { queueObjectives } from '../../../lib/ops/audit';
import { jobTypeInput, pipelineInput } from '../config/builders';

const RULE = 'Tenang-O3-QueueAgeThreshold';

/** A config whose one job type, order.ship on stage test, has a 300 s objective (queue tenang-test-order-ship). */
function config(latencyObjectiveSeconds = 300): PipelineConfig {
  return loadPipelineConfig(pipelineInput({ jobTypes: [jobTypeInput({ latencyObjectiveSeconds })] }));
}

/** The job type's queue, its consumer, and an age alarm with `alarm` over its properties. */
function template(
  alarm: Record<string, unknown> = {},
  queueName = 'tenang-test-order-ship',
): Record<string, unknown> {
  return {
    Parameters: { AgeThreshold: { Type: 'Number', Default: 600 } },
    Resources: {
      Queue: { Type: 'AWS::SQS::Queue', Properties: { QueueName: queueName, VisibilityTimeout: 60 } },
      Consumer: { Type: 'AWS::Lambda::Function', Properties: { Timeout: 10, MemorySize: 256 } },
      Mapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: { EventSourceArn: { 'Fn::GetAtt': ['Queue', 'Arn'] }, FunctionName: { Ref: 'Consumer' } },
      },
      Topic: { Type: 'AWS::SNS::Topic' },
      AgeAlarm: {
        Type: 'AWS::CloudWatch::Alarm',
        Properties: {
          Namespace: 'AWS/SQS',
          MetricName: 'ApproximateAgeOfOldestMessage',
          Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['Queue', 'QueueName'] } }],
          Statistic: 'Maximum',
          Period: 60,
          EvaluationPeriods: 1,
          Threshold: 300,
          ComparisonOperator: 'GreaterThanThreshold',
          AlarmActions: [{ Ref: 'Topic' }],
          ...alarm,
        },
      },
    },
  };
}

/** The threshold rule's item when `t` is audited with the config's objectives. */
function judged(t: Record<string, unknown>, c: PipelineConfig = config()): ChecklistItem {
  const { items } = auditTemplates([{ name: 'template', template: t }], { objectives: queueObjectives(c) });
  const found = items.find((i) => i.ruleId === RULE);
  if (found === undefined) throw new Error(`no checklist item ${RULE}`);
  return found;
}

describe('Function: queueObjectives', () => {
  it("when the config declares a job type, it gives that job type's queue name and latency objective", () => {
    // Prepare
    const c = config(120);

    // Act
    const objectives = queueObjectives(c);

    // Assess
    expect(objectives).toEqual([
      { queueName: 'tenang-test-order-ship', jobType: 'order.ship', latencyObjectiveSeconds: 120 },
    ]);
  });
});

describe('Function: auditTemplates (O3-QueueAgeThreshold)', () => {
  it("when the age alarm's Threshold is above the job type's objective, it fails asking for at most the objective", () => {
    // Prepare
    const t = template({ Threshold: 900 });

    // Act
    const item = judged(t);

    // Assess
    expect(item.status).toBe('fail');
    expect(item.resources).toEqual(['AgeAlarm']);
    expect(item.why).toContain('job type order.ship, latency objective 300 s');
    expect(item.why).toContain('Threshold 900 s is above the objective');
    expect(item.why).toContain('set Threshold to at most 300 s');
  });

  it("when the age alarm's Threshold equals the job type's objective, it passes", () => {
    // Prepare
    const t = template({ Threshold: 300 });

    // Act
    const item = judged(t);

    // Assess
    expect(item.status).toBe('pass');
    expect(item.why).toContain('Threshold 300 s is within the objective');
  });

  it('when the Threshold is a parameter whose default is above the objective, it fails saying so', () => {
    // Prepare
    const t = template({ Threshold: { Ref: 'AgeThreshold' } });

    // Act
    const item = judged(t);

    // Assess
    expect(item.status).toBe('fail');
    expect(item.why).toContain('with the default 600 of parameter AgeThreshold');
  });

  it('when the alarm returns a metric-math expression, it is not-checkable naming the expression', () => {
    // Prepare
    const t = template({
      MetricName: undefined,
      Namespace: undefined,
      Dimensions: undefined,
      Statistic: undefined,
      Period: undefined,
      Metrics: [
        {
          Id: 'age',
          ReturnData: false,
          MetricStat: {
            Metric: {
              Namespace: 'AWS/SQS',
              MetricName: 'ApproximateAgeOfOldestMessage',
              Dimensions: [{ Name: 'QueueName', Value: { 'Fn::GetAtt': ['Queue', 'QueueName'] } }],
            },
            Period: 60,
            Stat: 'Maximum',
          },
        },
        { Id: 'minutes', Expression: 'age / 60', ReturnData: true },
      ],
      Threshold: 5,
    });

    // Act
    const item = judged(t);

    // Assess
    expect(item.status).toBe('not-checkable');
    expect(item.why).toContain('the expression age / 60');
  });

  it("when the alarm watches a queue that is no job type's, the rule does not apply", () => {
    // Prepare
    const t = template({ Threshold: 900 }, 'someone-elses-queue');

    // Act
    const item = judged(t);

    // Assess
    expect(item.status).toBe('not-applicable');
    expect(item.why).toContain('no ApproximateAgeOfOldestMessage alarm watches the queue of a job type');
  });
});

describe('Function: auditTemplate (O3-QueueAgeThreshold)', () => {
  it('when no config is given, the rule is not-applicable saying no objective is known', () => {
    // Prepare
    const t = template({ Threshold: 900 });

    // Act
    const items = auditTemplate(t);

    // Assess
    const item = items.find((i) => i.ruleId === RULE);
    expect(item?.status).toBe('not-applicable');
    expect(item?.why).toContain('no latency objective is known');
  });
});
