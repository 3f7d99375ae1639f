# The Debian package: floodgate_<version>-<revision>_amd64.deb, made by `cpack` in a build
# directory (deploy/build-package does the whole of it). Only the `server` component goes in:
# the node, floodgate-cli, the systemd unit, the config as a conffile, the dashboards, the
# examples and the docs; Depends comes from dpkg-shlibdeps (Debian 12's runtime libraries).
set(FLOODGATE_PACKAGE_RELEASE 1 CACHE STRING "The Debian revision of the package (-N)")
set(fg_pkg ${CMAKE_BINARY_DIR}/package)
set(fg_deb ${CMAKE_CURRENT_LIST_DIR}/debian)

# The unit is deploy/systemd/floodgate.service with the package's paths.
file(READ ${CMAKE_CURRENT_LIST_DIR}/systemd/floodgate.service fg_unit)
string(REPLACE "/usr/local/bin/" "/usr/bin/" fg_unit "${fg_unit}")
string(REPLACE "/usr/local/share/doc/" "/usr/share/doc/" fg_unit "${fg_unit}")
file(WRITE ${fg_pkg}/floodgate.service "${fg_unit}")
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS
  ${CMAKE_CURRENT_LIST_DIR}/systemd/floodgate.service)

# `floodgate --help` as the package's manual (/usr/share/doc/floodgate/floodgate.help).
add_custom_command(OUTPUT ${fg_pkg}/floodgate.help
  COMMAND floodgate --help > ${fg_pkg}/floodgate.help
  DEPENDS floodgate VERBATIM)
add_custom_target(floodgate-help ALL DEPENDS ${fg_pkg}/floodgate.help)

install(FILES ${fg_pkg}/floodgate.service DESTINATION /lib/systemd/system COMPONENT server)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/floodgate.example.yaml DESTINATION /etc/floodgate
  RENAME floodgate.yaml COMPONENT server)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/rls/example.yaml DESTINATION /etc/floodgate/rls
  COMPONENT server)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/grafana/floodgate.json
  DESTINATION ${CMAKE_INSTALL_DATADIR}/floodgate/grafana COMPONENT server)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/prometheus/floodgate-rules.yaml
  ${CMAKE_CURRENT_LIST_DIR}/prometheus/prometheus.yml
  DESTINATION ${CMAKE_INSTALL_DATADIR}/floodgate/prometheus COMPONENT server)
install(DIRECTORY ${CMAKE_CURRENT_LIST_DIR}/examples/
  DESTINATION ${CMAKE_INSTALL_DATADIR}/floodgate/examples COMPONENT server)
install(FILES ${CMAKE_SOURCE_DIR}/README.md ${CMAKE_SOURCE_DIR}/node/OPERATIONS.md
  ${CMAKE_SOURCE_DIR}/node/SETTINGS.md ${CMAKE_SOURCE_DIR}/api/COMMANDS.md
  ${fg_pkg}/floodgate.help DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT server)
install(FILES ${CMAKE_CURRENT_LIST_DIR}/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR}
  RENAME DEPLOY.md COMPONENT server)
install(FILES ${fg_deb}/copyright DESTINATION ${CMAKE_INSTALL_DOCDIR} COMPONENT server)

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME floodgate)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)  # (the unit and /etc are absolute destinations)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_STRIP_FILES ON)
set(CPACK_PACKAGE_CONTACT "Floodgate maintainers <floodgate@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "distributed rate-limiter cluster speaking the Redis protocol")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION
  "Peer nodes holding sharded rate-limiter state, with gossip membership, replication and\n\
failover, leases, a Redis-protocol front door, a native protocol and Envoy's rate-limit\n\
and quota services. This package holds the node (floodgate), its command-line client\n\
(floodgate-cli) and a systemd unit.")
set(CPACK_DEBIAN_PACKAGE_SECTION database)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_RELEASE ${FLOODGATE_PACKAGE_RELEASE})
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
# (useradd in postinst; tzdata: the calendar windows' zones are read from /usr/share/zoneinfo)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "passwd, tzdata")
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL server)
set(CPACK_COMPONENTS_GROUPING ALL_COMPONENTS_IN_ONE)
set(CPACK_DEBIAN_PACKAGE_CONTROL_EXTRA
  ${fg_deb}/conffiles ${fg_deb}/postinst ${fg_deb}/prerm ${fg_deb}/postrm)
set(CPACK_DEBIAN_PACKAGE_CONTROL_STRICT_PERMISSION ON)
include(CPack)
