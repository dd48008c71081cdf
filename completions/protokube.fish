# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_protokube_global_optspecs
    string join \n cloud= gce-compute-endpoint= gce-dns-endpoint= digitalocean-api-endpoint= digitalocean-metadata-endpoint= hetzner-api-endpoint= hetzner-metadata-endpoint= openstack-api-endpoint= openstack-metadata-endpoint= azure-api-endpoint= azure-metadata-endpoint= scaleway-api-endpoint= scaleway-metadata-endpoint= cluster-spec= cluster-id= master= root= instance-id= availability-zone= region= internal-ip= external-ip= dns= zone= dns-internal-suffix= templates= dry-run o/output= detailed-exitcode timeout= verify-interval= log-format= metrics-file= v/verbose q/quiet blank-check= no-progress channels= bootstrap-master-node-labels= node-name= adopt gossip-protocol= gossip-listen= gossip-secret= gossip-protocol-secondary= gossip-listen-secondary= gossip-secret-secondary= gossip-seed= gossip-seed-secondary= gossip-conn-limit= etcd-image= etcd-election-timeout= etcd-heartbeat-interval= tls-ca= tls-cert= tls-key= peer-ca= peer-cert= peer-key= tls-auth= v= gossip= containerized= initialize-rbac= manage-etcd= remove-dns-names= dns-update-interval= dns-server= apply-taints= etcd-backup-image= etcd-backup-store= h/help V/version
end

function __fish_protokube_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_protokube_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_protokube_using_subcommand
    set -l cmd (__fish_protokube_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c protokube -n "__fish_protokube_needs_command" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_needs_command" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_needs_command" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_needs_command" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_needs_command" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_needs_command" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_needs_command" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_needs_command" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_needs_command" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_needs_command" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l etcd-image -d 'etcd image for every etcd pod [default: spec.etcdClusters[].image, else registry.k8s.io/etcd:<version>-0]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l etcd-election-timeout -d 'etcd election timeout in milliseconds [default: spec leaderElectionTimeout]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l etcd-heartbeat-interval -d 'etcd heartbeat interval in milliseconds [default: spec heartbeatInterval]' -r
complete -c protokube -n "__fish_protokube_needs_command" -l tls-ca -d 'CA file for etcd clients (ETCD_TRUSTED_CA_FILE)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l tls-cert -d 'Server certificate (ETCD_CERT_FILE); with --tls-key, etcd serves https' -r
complete -c protokube -n "__fish_protokube_needs_command" -l tls-key -d 'Server key (ETCD_KEY_FILE)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l peer-ca -d 'CA file for peers (ETCD_PEER_TRUSTED_CA_FILE)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l peer-cert -d 'Peer certificate (ETCD_PEER_CERT_FILE)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l peer-key -d 'Peer key (ETCD_PEER_KEY_FILE)' -r
complete -c protokube -n "__fish_protokube_needs_command" -l tls-auth -d 'Require client certificates (ETCD_CLIENT_CERT_AUTH, ETCD_PEER_CLIENT_CERT_AUTH); kOps writes `--tls-auth=true`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_needs_command" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_needs_command" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_needs_command" -l dns-server -r
complete -c protokube -n "__fish_protokube_needs_command" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_needs_command" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_needs_command" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_needs_command" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_needs_command" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_needs_command" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_needs_command" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_needs_command" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_needs_command" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_needs_command" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_needs_command" -s V -l version -d 'Print version'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "discover-volumes" -d 'List this cluster\'s etcd volumes in this node\'s availability zone (read-only)'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "mount" -d 'Claim, attach and mount this node\'s etcd volumes (control-plane nodes only)'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "render-manifests" -d 'Write the static-pod manifests: etcd per mounted member and the control plane on masters, kube-proxy on every node'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "publish-dns" -d 'Publish the names etcd peers, nodes and users need, to Route53 or /etc/hosts'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "sync" -d 'Discover, mount, render and publish in one run (what boot scripts and timers call)'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "reset" -d 'Undo this node\'s part, for a master being retired or a node being repurposed'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "apply-channels" -d 'Apply the cluster\'s addon channels with kOps\' channels tool (control-plane nodes)'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "label-node" -d 'Give this node kOps\' mandatory control-plane labels through the Kubernetes API'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "version" -d 'Print the build: version, git commit, build date, rustc, target and enabled features (`-o json` for one object)'
complete -c protokube -n "__fish_protokube_needs_command" -f -a "gossip" -d 'Be a member of kOps\' gossip network (`*.k8s.local` clusters) and keep the hosts block from its view, until stopped'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand discover-volumes" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand mount" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand mount" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l etcd-image -d 'etcd image for every etcd pod [default: spec.etcdClusters[].image, else registry.k8s.io/etcd:<version>-0]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l etcd-election-timeout -d 'etcd election timeout in milliseconds [default: spec leaderElectionTimeout]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l etcd-heartbeat-interval -d 'etcd heartbeat interval in milliseconds [default: spec heartbeatInterval]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l tls-ca -d 'CA file for etcd clients (ETCD_TRUSTED_CA_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l tls-cert -d 'Server certificate (ETCD_CERT_FILE); with --tls-key, etcd serves https' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l tls-key -d 'Server key (ETCD_KEY_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l peer-ca -d 'CA file for peers (ETCD_PEER_TRUSTED_CA_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l peer-cert -d 'Peer certificate (ETCD_PEER_CERT_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l peer-key -d 'Peer key (ETCD_PEER_KEY_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l tls-auth -d 'Require client certificates (ETCD_CLIENT_CERT_AUTH, ETCD_PEER_CLIENT_CERT_AUTH); kOps writes `--tls-auth=true`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand render-manifests" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l wait -d 'Wait until Route53 reports the change INSYNC (bounded by --timeout)'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand publish-dns" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l etcd-image -d 'etcd image for every etcd pod [default: spec.etcdClusters[].image, else registry.k8s.io/etcd:<version>-0]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l etcd-election-timeout -d 'etcd election timeout in milliseconds [default: spec leaderElectionTimeout]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l etcd-heartbeat-interval -d 'etcd heartbeat interval in milliseconds [default: spec heartbeatInterval]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l tls-ca -d 'CA file for etcd clients (ETCD_TRUSTED_CA_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l tls-cert -d 'Server certificate (ETCD_CERT_FILE); with --tls-key, etcd serves https' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l tls-key -d 'Server key (ETCD_KEY_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l peer-ca -d 'CA file for peers (ETCD_PEER_TRUSTED_CA_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l peer-cert -d 'Peer certificate (ETCD_PEER_CERT_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l peer-key -d 'Peer key (ETCD_PEER_KEY_FILE)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l tls-auth -d 'Require client certificates (ETCD_CLIENT_CERT_AUTH, ETCD_PEER_CLIENT_CERT_AUTH); kOps writes `--tls-auth=true`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand sync" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l wait -d 'Wait until Route53 reports the change INSYNC (bounded by --timeout)'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand sync" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand reset" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l detach -d 'Also detach the etcd volumes from this instance (so another master can claim them)'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand reset" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand apply-channels" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand label-node" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand version" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand version" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand version" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand version" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand version" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand version" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand version" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand version" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand version" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand version" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand version" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand version" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand version" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l cloud -d 'The cloud this node runs on' -r -f -a "aws\t'Amazon Web Services: EC2 instances, EBS volumes, Route53'
gce\t'Google Compute Engine: instances, persistent disks, Cloud DNS'
digitalocean\t'DigitalOcean: the gossip member (etcd-manager and dns-controller do the rest)'
hetzner\t'Hetzner Cloud: the gossip member (etcd-manager and dns-controller do the rest)'
openstack\t'OpenStack: the gossip member (etcd-manager and dns-controller do the rest)'
azure\t'Azure: the gossip member (etcd-manager and dns-controller do the rest)'
scaleway\t'Scaleway: the gossip member (etcd-manager and dns-controller do the rest)'"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gce-compute-endpoint -d 'Compute Engine\'s API root, for tests and private endpoints (with `--cloud gce`) [default: `https://compute.googleapis.com/compute/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gce-dns-endpoint -d 'Cloud DNS\' API root, for tests and private endpoints (with `--cloud gce`) [default: `https://dns.googleapis.com/dns/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l digitalocean-api-endpoint -d 'DigitalOcean\'s API root, for tests and private endpoints (with `--cloud digitalocean`) [default: `https://api.digitalocean.com/v2/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l digitalocean-metadata-endpoint -d 'The droplet metadata service\'s root, for tests (with `--cloud digitalocean`) [default: `http://169.254.169.254/metadata/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l hetzner-api-endpoint -d 'Hetzner Cloud\'s API root, for tests and private endpoints (hcloud\'s `HCLOUD_ENDPOINT` too) (with `--cloud hetzner`) [default: `https://api.hetzner.cloud/v1/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l hetzner-metadata-endpoint -d 'The Hetzner metadata service\'s root, for tests (with `--cloud hetzner`) [default: `http://169.254.169.254/hetzner/v1/metadata/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l openstack-api-endpoint -d 'Keystone\'s root, whose catalogue names Nova\'s (`OS_AUTH_URL` too, as nodeup writes it) (with `--cloud openstack`) [default: `https://keystone.invalid/v3/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l openstack-metadata-endpoint -d 'The OpenStack metadata service\'s root, for tests (with `--cloud openstack`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l azure-api-endpoint -d 'Azure Resource Manager\'s root, for tests and sovereign clouds (with `--cloud azure`) [default: `https://management.azure.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l azure-metadata-endpoint -d 'The Azure instance metadata service\'s root, for tests (with `--cloud azure`) [default: `http://169.254.169.254/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l scaleway-api-endpoint -d 'Scaleway\'s API root, for tests and private endpoints (the SDK\'s `SCW_API_URL` too) (with `--cloud scaleway`) [default: `https://api.scaleway.com/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l scaleway-metadata-endpoint -d 'The Scaleway instance metadata API\'s root, for tests (with `--cloud scaleway`) [default: `http://169.254.42.42/`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l cluster-spec -d 'A kOps `Cluster` document (kops.k8s.io/v1alpha2), normally the completed spec kOps writes to its state store' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l cluster-id -d 'Cluster name [default: metadata.name of the spec, else the instance\'s KubernetesCluster tag]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l master -d 'This node is a control-plane node (volumes, etcd, control-plane manifests, API records)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l root -d 'Directory the host\'s `/` is found at; every host path is taken under it [default: `/`, `/rootfs` with kOps\' `--containerized=true`]' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l instance-id -d 'This instance\'s id (on GCE its name) [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l availability-zone -d 'This instance\'s availability zone [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l region -d 'The instance\'s region [default: from the instance metadata service]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l internal-ip -d 'This instance\'s private IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l external-ip -d 'This instance\'s public IP address, IPv4 or IPv6, taken as its own beside those the cloud lists for it [default: those the cloud lists]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l dns -d 'Where DNS records go: `zones` (the cloud\'s DNS service: Route53 on AWS, Cloud DNS on GCE; also called by its name, `route53`, `clouddns`, or kOps\', `aws-route53`, `google-clouddns`), `hosts` (the guarded block in /etc/hosts; kOps\' `gossip`) or `none` [default: hosts for `.k8s.local` clusters, else zones]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l zone -d 'DNS zone choice (repeatable): `*` or `*/*` any, `*/ID`, `NAME`, `NAME/ID` [default: spec.dnsZone, else the longest-suffix zone]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l dns-internal-suffix -d 'Suffix of internal names such as etcd peers [default: `.internal.<cluster>`]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l templates -d 'Directory of Tera templates that override the built-in ones (same file names)' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -s o -l output -d 'Report format on stdout' -r -f -a "text\t''
json\t''
yaml\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l timeout -d 'One deadline for the whole run, e.g. `90s`, `5m` (at least `1s`): every wait, cloud call, Kubernetes API request, credential plugin and child tool ends by it, then the run is "not ready" (exit 75)' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l verify-interval -d 'How long a converged node trusts what its last full check of the cloud found: within it, `sync` on a master asks `DescribeInstances` alone while the answer is unchanged, and on a gossip worker asks nothing (less a jitter of up to a tenth); after it, or on any change, the cloud is checked in full. `0` checks fully every run' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l log-format -d 'stderr log lines: `text` (timestamped when stderr is neither a terminal nor the journal) or `json`, one object per line (`ts` RFC 3339, `level`, `msg`, `target`, fields)' -r -f -a "text\t'Human-readable lines'
json\t'One JSON object per line, for log shippers'"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l metrics-file -d 'After every run (failed runs and dry runs too), write Prometheus text-format metrics to FILE, atomically, for node-exporter\'s textfile collector' -r -F
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l blank-check -d 'How much of a device is read to prove it blank before a format: `sampled` (the first 4 MiB, the last 1 MiB and chunks spread between, 64 MiB in all) or `full` (every byte)' -r -f -a "sampled\t'The first 4 MiB, the last 1 MiB and 16 KiB chunks spread evenly between, 64 MiB in all (a device no larger is read whole)'
full\t'Every byte of the device'"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l channels -d 'Addon channels to apply on a control-plane node with kOps\' `channels` tool (`<root>/opt/kops/bin/channels apply channel URL --v=4 --yes`), comma-separated; part of `sync` when given' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l bootstrap-master-node-labels -d 'Give this control-plane node kOps\' mandatory labels through the Kubernetes API (KUBECONFIG, default /var/lib/kops/kubeconfig); part of `sync` when given with --node-name' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l node-name -d 'This node\'s name in Kubernetes (its Node object), for the labels' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-protocol -d 'The primary gossip protocol: `mesh` or `memberlist` (kOps\' default: mesh)' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-listen -d 'Where the primary protocol listens [default: 0.0.0.0:3999]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-secret -d 'The primary protocol\'s secret (mesh encrypts with it; empty: no secret, still encrypted)' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-protocol-secondary -d 'The secondary gossip protocol [default: memberlist]; an empty value for none' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-listen-secondary -d 'Where the secondary protocol listens [default: 0.0.0.0:4000]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-secret-secondary -d 'The secondary protocol\'s secret (not the primary\'s by default, as in kOps)' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-seed -d 'Seeds of the primary protocol beside the cloud\'s control-plane instances: IP (dialled on the protocol\'s port) or IP:PORT, comma-separated' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-seed-secondary -d 'Seeds of the secondary protocol beside the cloud\'s, as --gossip-seed' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip-conn-limit -d 'The most connections per protocol [default: kOps\' variable GOSSIP_DNS_CONN_LIMIT; 0 or unset: 1024]' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l v -d 'klog verbosity, as nodeup passes it (`--v=4`): 4 and 5 are -v, 6 and more -vv' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l gossip -d 'Gossip DNS (the old flag): true means `--dns hosts`' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l containerized -d 'kOps 1.12–1.20 ran protokube in a container with the host at `/rootfs`: true means the host\'s root is `/rootfs` (unless --root is given), the channels tool is looked up on PATH when the host has none at `/opt/kops/bin/channels`, and kubelet is started on a control-plane node where it is not running' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l initialize-rbac -d 'kOps ≤ 1.22: on a control-plane node, create the `kube-dns` and `kube-proxy` ServiceAccounts and the `kubeadm:node-proxier` ClusterRoleBinding when missing' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l manage-etcd -d 'kOps ≤ 1.22: false means etcd is not protokube\'s on this node (etcd-manager runs it)' -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l remove-dns-names -d 'kOps ≤ 1.22 beside etcd-manager (Route53, Cloud DNS): the names kOps precreated for etcd (comma-separated), each removed while it still holds kOps\' placeholder address' -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l dns-update-interval -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l dns-server -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l apply-taints -r -f -a "true\t''
false\t''"
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l etcd-backup-image -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l etcd-backup-store -r
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l once -d 'Join, take the view, write the hosts block and exit (timers, by hand)'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l dry-run -d 'Compute and report every change, make none'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l detailed-exitcode -d 'Exit 2 when something was changed (or would be, with --dry-run)'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -s v -l verbose -d 'More log output on stderr (-v debug, -vv trace)'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -s q -l quiet -d 'Only errors on stderr'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l no-progress -d 'No progress bars, even on a terminal'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -l adopt -d 'Take over DNS names of this cluster\'s own set that exist with only A/AAAA records and no ownership TXT (left by kOps\' dns-controller or the old protokube): the TXT is written beside them. Without it such names are left alone with a warning'
complete -c protokube -n "__fish_protokube_using_subcommand gossip" -s h -l help -d 'Print help (see more with \'--help\')'
