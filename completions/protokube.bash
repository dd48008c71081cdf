_protokube() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="protokube"
                ;;
            protokube,apply-channels)
                cmd="protokube__subcmd__apply__subcmd__channels"
                ;;
            protokube,discover-volumes)
                cmd="protokube__subcmd__discover__subcmd__volumes"
                ;;
            protokube,gossip)
                cmd="protokube__subcmd__gossip"
                ;;
            protokube,label-node)
                cmd="protokube__subcmd__label__subcmd__node"
                ;;
            protokube,mount)
                cmd="protokube__subcmd__mount"
                ;;
            protokube,publish-dns)
                cmd="protokube__subcmd__publish__subcmd__dns"
                ;;
            protokube,render-manifests)
                cmd="protokube__subcmd__render__subcmd__manifests"
                ;;
            protokube,reset)
                cmd="protokube__subcmd__reset"
                ;;
            protokube,sync)
                cmd="protokube__subcmd__sync"
                ;;
            protokube,version)
                cmd="protokube__subcmd__version"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        protokube)
            opts="-o -v -q -h -V --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --etcd-image --etcd-election-timeout --etcd-heartbeat-interval --tls-ca --tls-cert --tls-key --peer-ca --peer-cert --peer-key --tls-auth --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help --version discover-volumes mount render-manifests publish-dns sync reset apply-channels label-node version gossip"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-election-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-heartbeat-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-auth)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__apply__subcmd__channels)
            opts="-o -v -q -h --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__discover__subcmd__volumes)
            opts="-o -v -q -h --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__gossip)
            opts="-o -v -q -h --once --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__label__subcmd__node)
            opts="-o -v -q -h --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__mount)
            opts="-o -v -q -h --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__publish__subcmd__dns)
            opts="-o -v -q -h --wait --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__render__subcmd__manifests)
            opts="-o -v -q -h --etcd-image --etcd-election-timeout --etcd-heartbeat-interval --tls-ca --tls-cert --tls-key --peer-ca --peer-cert --peer-key --tls-auth --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --etcd-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-election-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-heartbeat-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-auth)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__reset)
            opts="-o -v -q -h --detach --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__sync)
            opts="-o -v -q -h --etcd-image --etcd-election-timeout --etcd-heartbeat-interval --tls-ca --tls-cert --tls-key --peer-ca --peer-cert --peer-key --tls-auth --wait --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --etcd-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-election-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-heartbeat-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-ca)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --peer-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-auth)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        protokube__subcmd__version)
            opts="-o -v -q -h --cloud --gce-compute-endpoint --gce-dns-endpoint --digitalocean-api-endpoint --digitalocean-metadata-endpoint --hetzner-api-endpoint --hetzner-metadata-endpoint --openstack-api-endpoint --openstack-metadata-endpoint --azure-api-endpoint --azure-metadata-endpoint --scaleway-api-endpoint --scaleway-metadata-endpoint --cluster-spec --cluster-id --master --root --instance-id --availability-zone --region --internal-ip --external-ip --dns --zone --dns-internal-suffix --templates --dry-run --output --detailed-exitcode --timeout --verify-interval --log-format --metrics-file --verbose --quiet --blank-check --no-progress --channels --bootstrap-master-node-labels --node-name --adopt --gossip-protocol --gossip-listen --gossip-secret --gossip-protocol-secondary --gossip-listen-secondary --gossip-secret-secondary --gossip-seed --gossip-seed-secondary --gossip-conn-limit --v --gossip --containerized --initialize-rbac --manage-etcd --remove-dns-names --dns-update-interval --dns-server --apply-taints --etcd-backup-image --etcd-backup-store --help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --cloud)
                    COMPREPLY=($(compgen -W "aws gce digitalocean hetzner openstack azure scaleway" -- "${cur}"))
                    return 0
                    ;;
                --gce-compute-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gce-dns-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --digitalocean-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --hetzner-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --openstack-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --azure-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-api-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --scaleway-metadata-endpoint)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-spec)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --cluster-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --master)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --root)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --availability-zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --region)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --internal-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --external-ip)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --zone)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-internal-suffix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --templates)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                -o)
                    COMPREPLY=($(compgen -W "text json yaml" -- "${cur}"))
                    return 0
                    ;;
                --timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --verify-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --metrics-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --blank-check)
                    COMPREPLY=($(compgen -W "sampled full" -- "${cur}"))
                    return 0
                    ;;
                --channels)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --bootstrap-master-node-labels)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --node-name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-protocol-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-listen-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-secret-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-seed-secondary)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip-conn-limit)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --v)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --gossip)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --containerized)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --initialize-rbac)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --manage-etcd)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --remove-dns-names)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-update-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --dns-server)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --apply-taints)
                    COMPREPLY=($(compgen -W "true false" -- "${cur}"))
                    return 0
                    ;;
                --etcd-backup-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --etcd-backup-store)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _protokube -o nosort -o bashdefault -o default protokube
else
    complete -F _protokube -o bashdefault -o default protokube
fi
