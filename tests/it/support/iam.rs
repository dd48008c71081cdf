//! IAM for the emulator: kOps' policies (from `tests/fixtures/kops/iam/`) attached to roles,
//! and the temporary credentials of those roles (`AssumeRole`) for protokube. The setup runs
//! through boto3 from the emulator's virtualenv, before enforcement is turned on.

use std::process::Command;

use super::moto::{python, Moto};

/// Temporary credentials of an assumed role.
#[derive(Clone, Debug)]
pub(crate) struct Credentials {
    pub key: String,
    pub secret: String,
    pub token: String,
}

const SETUP: &str = r#"
import boto3, json, sys
url, role, policy = sys.argv[1], sys.argv[2], sys.argv[3]
kw = dict(endpoint_url=url, region_name="us-east-1",
          aws_access_key_id="testing", aws_secret_access_key="testing")
iam = boto3.client("iam", **kw)
trust = {"Version": "2012-10-17", "Statement": [
    {"Effect": "Allow", "Principal": {"AWS": "*"}, "Action": "sts:AssumeRole"}]}
arn = iam.create_role(RoleName=role, AssumeRolePolicyDocument=json.dumps(trust))["Role"]["Arn"]
iam.put_role_policy(RoleName=role, PolicyName="kops", PolicyDocument=policy)
creds = boto3.client("sts", **kw).assume_role(RoleArn=arn, RoleSessionName="protokube")
c = creds["Credentials"]
print(json.dumps({"key": c["AccessKeyId"], "secret": c["SecretAccessKey"], "token": c["SessionToken"]}))
"#;

/// kOps' policy `name` (e.g. `ha.masters`) as real AWS and the emulator write it: partition
/// `aws`, and the cluster's hosted zone `Z1AFAKE1ZON3YO` replaced by `zone_id`.
pub(crate) fn kops_policy(name: &str, zone_id: Option<&str>) -> serde_json::Value {
    let text = std::fs::read_to_string(super::fixture(&format!("iam/{name}.json")))
        .unwrap()
        .replace("aws-test", "aws");
    let text = match zone_id {
        Some(id) => text.replace("hostedzone/Z1AFAKE1ZON3YO", &format!("hostedzone/{id}")),
        None => text,
    };
    serde_json::from_str(&text).unwrap()
}

/// `policy` without `permission` (e.g. `ec2:DescribeVolumes`) in any statement.
pub(crate) fn without(policy: &serde_json::Value, permission: &str) -> serde_json::Value {
    let mut policy = policy.clone();
    let statements = policy["Statement"].as_array_mut().unwrap();
    for statement in statements.iter_mut() {
        if let Some(actions) = statement["Action"].as_array_mut() {
            actions.retain(|a| a.as_str() != Some(permission));
        } else if statement["Action"].as_str() == Some(permission) {
            statement["Action"] = serde_json::json!([]);
        }
    }
    statements.retain(|s| s["Action"].as_array().is_none_or(|a| !a.is_empty()));
    policy
}

/// A role `name` with `policy`, and the temporary credentials of a session in it. Call before
/// [`Moto::enforce_iam`].
pub(crate) fn role_credentials(moto: &Moto, name: &str, policy: &serde_json::Value) -> Credentials {
    let out = Command::new(python())
        .args(["-c", SETUP, &moto.endpoint(), name, &policy.to_string()])
        .output()
        .expect("running boto3 from the emulator's virtualenv");
    assert!(
        out.status.success(),
        "IAM setup failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let field = |k: &str| json[k].as_str().unwrap().to_owned();
    Credentials {
        key: field("key"),
        secret: field("secret"),
        token: field("token"),
    }
}
