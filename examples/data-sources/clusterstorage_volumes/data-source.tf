# The claims Longhorn still serves, wherever they are.
data "clusterstorage_volumes" "longhorn" {
  driver = "driver.longhorn.io"
}

# The claims of one application, by label.
data "clusterstorage_volumes" "shop" {
  namespace      = "shop"
  label_selector = "app.kubernetes.io/part-of=shop"
}

output "longhorn_claims" {
  value = [for v in data.clusterstorage_volumes.longhorn.volumes : "${v.key} (${v.size}, used by ${join(", ", [for w in v.workloads : "${w.kind}/${w.name}"])})"]
}

check "longhorn_is_empty" {
  assert {
    condition     = length(data.clusterstorage_volumes.longhorn.volumes) == 0
    error_message = "Longhorn still serves claims: migrate them (clusterstorage_volume_migration) before removing it."
  }
}
