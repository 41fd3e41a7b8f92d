import { TemplateFormatError, auditTemplate } from '../../../lib/audit/template-audit';

/** A hand-written template as a non-CDK tool would emit it: literal ARNs, quoted numbers, a JSON-string redrive policy. */
function rawTemplate(visibility: string): Record<string, unknown> {
  return {
    Resources: {
      Jobs: {
        Type: 'AWS::SQS::Queue',
        Properties: {
          QueueName: 'jobs',
          VisibilityTimeout: visibility,
          RedrivePolicy:
            '{"deadLetterTargetArn":"arn:aws:sqs:eu-west-1:123456789012:jobs-dlq","maxReceiveCount":"5"}',
        },
      },
      JobsDlq: { Type: 'AWS::SQS::Queue', Properties: { QueueName: 'jobs-dlq' } },
      Worker: {
        Type: 'AWS::Lambda::Function',
        Properties: { FunctionName: 'worker', Timeout: '20', MemorySize: 256 },
      },
      Mapping: {
        Type: 'AWS::Lambda::EventSourceMapping',
        Properties: {
          EventSourceArn: 'arn:aws:sqs:eu-west-1:123456789012:jobs',
          FunctionName: 'arn:aws:lambda:eu-west-1:123456789012:function:worker',
          FunctionResponseTypes: ['ReportBatchItemFailures'],
        },
      },
    },
  };
}

describe('Function: auditTemplate', () => {
  it('when a raw template names resources by literal ARN, it resolves the mapping to its queue and function', () => {
    // Act
    const items = auditTemplate(rawTemplate('60'));

    // Assess
    const byRule = Object.fromEntries(items.map((i) => [i.ruleId, i]));
    expect(byRule['Tenang-D2']).toMatchObject({ status: 'fail', resources: ['Jobs'] });
    expect(byRule['Tenang-D2']?.why).toContain(
      'visibility timeout 60 s < 6 × Worker timeout 20 s + batching window 0 s = 120 s',
    );
    expect(byRule['Tenang-R3']?.status).toBe('pass');
    expect(byRule['Tenang-D3']?.status).toBe('pass');
    expect(byRule['Tenang-O3-QueueAge']?.status).toBe('fail');
    expect(byRule['Tenang-O3-DlqDepth']).toMatchObject({ status: 'fail', resources: ['JobsDlq'] });
    expect(byRule['Tenang-R6']?.status).toBe('not-applicable');
  });

  it('when the visibility timeout is long enough, the D2 rule passes', () => {
    // Act
    const items = auditTemplate(rawTemplate('120'));

    // Assess
    expect(items.find((i) => i.ruleId === 'Tenang-D2')?.status).toBe('pass');
  });

  it('when the input has no Resources, it throws a TemplateFormatError', () => {
    // Act
    const act = (): unknown => auditTemplate({ AWSTemplateFormatVersion: '2010-09-09' });

    // Assess
    expect(act).toThrow(TemplateFormatError);
  });
});
